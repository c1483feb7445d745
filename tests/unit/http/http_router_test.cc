// Router: pure matching, and 404/405/params through a real server.
#include "common/http/http_router.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

namespace ddp::http {
namespace {

Handler tagged(std::string tag) {
  return [tag](Request& req, std::shared_ptr<Responder> r) {
    std::string body = tag;
    for (const auto& [k, v] : req.params) body += " " + k + "=" + v;
    r->reply(Response::text(200, body));
  };
}

Router storeRouter() {
  Router r;
  r.add("GET", "/v1/jobs", tagged("list"));
  r.add("GET", "/v1/jobs/{name}", tagged("job"));
  r.add("DELETE", "/v1/jobs/{name}", tagged("delete"));
  r.add("GET", "/v1/jobs/active", tagged("active"));
  r.add("PUT", "/v1/jobs/{name}/generations/{g}/store/{op}", tagged("store-put"));
  r.add("GET", "/v1/jobs/{name}/generations/{g}/store/{op}", tagged("store-get"));
  r.add("POST", "/v1/jobs/{name}/generations/{g}/store/{op}", tagged("store-post"));
  return r;
}

TEST(HttpRouterTest, MatchFillsDecodedParams) {
  Router r = storeRouter();
  auto m = r.match("PUT", "/v1/jobs/fm%2Fnist/generations/3/store/value");
  ASSERT_EQ(m.kind, Router::Match::Kind::kFound);
  EXPECT_EQ(m.params, (std::map<std::string, std::string>{{"name", "fm/nist"}, {"g", "3"}, {"op", "value"}}));
  m = r.match("GET", "/v1/jobs/a%20b");
  ASSERT_EQ(m.kind, Router::Match::Kind::kFound);
  EXPECT_EQ(m.params.at("name"), "a b");
}

TEST(HttpRouterTest, LiteralSegmentsWinOverParameters) {
  Router r = storeRouter();
  auto m = r.match("GET", "/v1/jobs/active");
  ASSERT_EQ(m.kind, Router::Match::Kind::kFound);
  EXPECT_TRUE(m.params.empty());  // "active", not {name}
  m = r.match("GET", "/v1/jobs/other");
  ASSERT_EQ(m.kind, Router::Match::Kind::kFound);
  EXPECT_EQ(m.params.at("name"), "other");
}

TEST(HttpRouterTest, UnknownPathsAndMethods) {
  Router r = storeRouter();
  EXPECT_EQ(r.match("GET", "/v1/nothing").kind, Router::Match::Kind::kNotFound);
  EXPECT_EQ(r.match("GET", "/v1/jobs/").kind, Router::Match::Kind::kNotFound);   // empty {name}
  EXPECT_EQ(r.match("GET", "/v1/jobs/a/b").kind, Router::Match::Kind::kNotFound);
  EXPECT_EQ(r.match("GET", "").kind, Router::Match::Kind::kNotFound);
  auto m = r.match("POST", "/v1/jobs/x");
  ASSERT_EQ(m.kind, Router::Match::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allowed, (std::vector<std::string>{"DELETE", "GET"}));
  m = r.match("DELETE", "/v1/jobs/x/generations/1/store/value");
  ASSERT_EQ(m.kind, Router::Match::Kind::kMethodNotAllowed);
  EXPECT_EQ(m.allowed, (std::vector<std::string>{"GET", "POST", "PUT"}));
}

TEST(HttpRouterTest, SplitPathKeepsEmptySegments) {
  EXPECT_EQ(splitPath("/a/b/"), (std::vector<std::string_view>{"a", "b", ""}));
  EXPECT_EQ(splitPath("/"), (std::vector<std::string_view>{""}));
  EXPECT_TRUE(splitPath("relative").empty());
}

TEST(HttpRouterTest, ServedThroughAServer) {
  Router r = storeRouter();
  ServerOptions o;
  o.handlerThreads = 1;
  Server server(o, r.handler());
  ASSERT_TRUE(server.start().isOk());
  httplib::Client client("127.0.0.1", server.port());
  client.set_url_encode(false);
  auto ok = client.Post("/v1/jobs/j1/generations/7/store/add?key=k", "", "text/plain");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "store-post g=7 name=j1 op=add");
  auto missing = client.Get("/v1/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "{\"error\":\"no such route: GET /v1/nope\"}");
  EXPECT_EQ(missing->get_header_value("Content-Type"), "application/json");
  auto wrong = client.Patch("/v1/jobs/j1", "", "text/plain");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "DELETE, GET");
  EXPECT_NE(wrong->body.find("method PATCH not allowed for /v1/jobs/j1"), std::string::npos) << wrong->body;
}

TEST(HttpRouterTest, TheObserverSeesEveryRequestsRouteAndItsAnswer) {
  Router r = storeRouter();
  std::mutex mu;
  std::vector<std::string> seen;  // "route status"
  r.setObserver([&](const Request&, const std::string& route, Responder& res) {
    res.onAnswer([&, route](int status) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back((route.empty() ? "-" : route) + " " + std::to_string(status));
    });
  });
  ServerOptions o;
  o.handlerThreads = 1;
  Server server(o, r.handler());
  ASSERT_TRUE(server.start().isOk());
  httplib::Client client("127.0.0.1", server.port());
  ASSERT_TRUE(client.Get("/v1/jobs/j1"));
  ASSERT_TRUE(client.Get("/v1/nope"));
  ASSERT_TRUE(client.Patch("/v1/jobs/j1", "", "text/plain"));
  server.stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"GET /v1/jobs/{name} 200", "- 404", "- 405"}));
}

}  // namespace
}  // namespace ddp::http
