// withBearerAuth (common/http/bearer_auth.h) behind a real server: the wrapped handler runs only
// for an accepted token, and the two 401 answers say what was wrong.
#include "common/http/bearer_auth.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "common/http/http_router.h"
#include "common/http/http_server.h"

namespace ddp::http {
namespace {

class BearerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Handler reached = [this](Request& req, std::shared_ptr<Responder> res) {
      ++reached_;
      Response out;
      out.contentType = "text/plain";
      out.body = "reached " + req.params["name"];
      res->reply(std::move(out));
    };
    router_.add("GET", "/fixed", withBearerAuth(fixedBearerToken("s3cret", "; or ask for --open"), reached));
    BearerAuth perJob;  // the token is the job's name reversed
    perJob.accepts = [](const Request& req, const std::string& presented) {
      return presented == std::string(req.params.at("name").rbegin(), req.params.at("name").rend());
    };
    perJob.refusal = [](const Request& req) { return "invalid token for job " + req.params.at("name"); };
    router_.add("GET", "/jobs/{name}", withBearerAuth(perJob, reached));
    ServerOptions o;
    o.host = "127.0.0.1";
    server_ = std::make_unique<Server>(o, router_.handler());
    ASSERT_TRUE(server_->start().isOk());
  }

  httplib::Result get(const std::string& path, const std::string& authorization) {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(10, 0);
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    return client.Get(path, headers);
  }

  Router router_;
  std::unique_ptr<Server> server_;
  std::atomic<int> reached_{0};
};

TEST_F(BearerAuthTest, TheHandlerRunsOnlyForAnAcceptedToken) {
  auto ok = get("/fixed", "Bearer s3cret");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto lower = get("/fixed", "bearer s3cret");
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->status, 200) << "the scheme is case-insensitive";
  EXPECT_EQ(reached_, 2);

  for (const char* bad : {"", "Basic s3cret", "Bearer ", "Bearer s3cre", "Bearer s3cret2"}) {
    auto r = get("/fixed", bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 401) << bad;
  }
  EXPECT_EQ(reached_, 2);
}

TEST_F(BearerAuthTest, MissingAndRefusedTokensAreToldApart) {
  auto missing = get("/fixed", "");
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->body.find("missing bearer token (Authorization: Bearer <token>; or ask for --open)"), std::string::npos)
      << missing->body;
  auto refused = get("/fixed", "Bearer nope");
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->body.find("\"invalid token\""), std::string::npos) << refused->body;
}

TEST_F(BearerAuthTest, ARouteCheckReadsTheRouteParams) {
  auto ok = get("/jobs/abc", "Bearer cba");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "reached abc");
  auto other = get("/jobs/xyz", "Bearer cba");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 401);
  EXPECT_NE(other->body.find("invalid token for job xyz"), std::string::npos) << other->body;
  auto missing = get("/jobs/abc", "");
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->body.find("missing bearer token (Authorization: Bearer <token>)"), std::string::npos) << missing->body;
  EXPECT_EQ(reached_, 1);
}

}  // namespace
}  // namespace ddp::http
