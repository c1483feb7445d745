// ddp::http::Server over real loopback sockets: keep-alive, deferred replies, limits, timeouts,
// streaming, stop().
#include "common/http/http_server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/unit/http/raw_http_client.h"

namespace ddp::http {
namespace {

using testing::RawConnection;
using testing::RawResponse;

// Requests to /park/... are kept (deferred); everything else is answered at once with
// "<method> <path> from <remote>" or, for /echo, the body.
class Parking {
 public:
  Handler handler() {
    return [this](Request& req, std::shared_ptr<Responder> r) {
      if (req.path.rfind("/park", 0) == 0) {
        r->onClose([this] {
          {
            std::lock_guard<std::mutex> lock(mu_);
            ++closed_;
          }
          cv_.notify_all();
        });
        {
          std::lock_guard<std::mutex> lock(mu_);
          parked_.emplace_back(req.path, std::move(r));
        }
        cv_.notify_all();
        return;
      }
      Response resp;
      resp.contentType = "text/plain";
      resp.body = (req.path == "/echo" || req.path == "/big") ? req.body : req.method + " " + req.path + " from " + req.remoteAddress;
      r->reply(std::move(resp));
    };
  }
  // Waits until `n` requests are parked (false at the deadline).
  bool waitParked(size_t n, Duration timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return parked_.size() >= n; });
  }
  // One notification releases every parked request: each gets its own path as the body.
  size_t releaseAll() {
    std::vector<std::pair<std::string, std::shared_ptr<Responder>>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(parked_);
    }
    size_t sent = 0;
    for (auto& [path, r] : all) sent += r->reply(Response::text(200, path)) ? 1 : 0;
    return sent;
  }
  std::vector<std::shared_ptr<Responder>> responders() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<Responder>> out;
    for (auto& [p, r] : parked_) out.push_back(r);
    return out;
  }
  // Waits until `n` parked requests saw their connection close (false at the deadline).
  bool waitClosed(int n, Duration timeout = std::chrono::seconds(5)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_ >= n; });
  }
  int closedWhileParked() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

 private:
  int closed_ = 0;  // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, std::shared_ptr<Responder>>> parked_;  // guarded by mu_
};

ServerOptions smallOptions() {
  ServerOptions o;
  o.handlerThreads = 2;
  return o;
}

std::string get(RawConnection& c, const std::string& path) {
  if (!c.send("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n")) return "<send failed>";
  auto r = c.readResponse();
  return r ? std::to_string(r->status) + " " + r->body : "<no response>";
}

TEST(HttpServerTest, KeepAliveReusesOneConnection) {
  Parking p;
  Server server(smallOptions(), p.handler());
  ASSERT_TRUE(server.start().isOk());
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  std::string first;
  for (int i = 0; i < 3; ++i) {
    auto r = client.Get("/hello?x=1");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    const std::string from = r->body.substr(r->body.find(" from ") + 6);
    if (i == 0) first = from;
    EXPECT_EQ(from, first) << "request " << i << " came over another connection";
  }
  EXPECT_EQ(server.connectionCount(), 1u);
}

TEST(HttpServerTest, Http10IsClosedAfterTheReply) {
  Parking p;
  Server server(smallOptions(), p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  ASSERT_TRUE(c.send("GET /old HTTP/1.0\r\n\r\n"));
  auto r = c.readResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("connection"), "close");
  EXPECT_TRUE(c.waitForClose());
}

TEST(HttpServerTest, ThousandDeferredRequestsOnTwoThreadsReleasedByOneNotification) {
  testing::raiseFdLimit();
  Parking p;
  Server server(smallOptions(), p.handler());  // 2 handler threads
  ASSERT_TRUE(server.start().isOk());
  constexpr int kWaiters = 1000;
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < kWaiters; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(conns.back()->ok()) << i;
    ASSERT_TRUE(conns.back()->send("GET /park/" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
  }
  ASSERT_TRUE(p.waitParked(kWaiters));
  // Every waiting request holds no thread: a short request is served at once.
  httplib::Client client("127.0.0.1", server.port());
  auto start = std::chrono::steady_clock::now();
  auto r = client.Get("/now");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_EQ(p.releaseAll(), static_cast<size_t>(kWaiters));
  for (int i = 0; i < kWaiters; ++i) {
    auto resp = conns[i]->readResponse();
    ASSERT_TRUE(resp) << i;
    EXPECT_EQ(resp->status, 200);
    EXPECT_EQ(resp->body, "/park/" + std::to_string(i));
  }
}

TEST(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Parking p;
  Server server(smallOptions(), p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  // The first is parked: the others must wait for its reply, not overtake it.
  ASSERT_TRUE(c.send("GET /park/a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nPUT /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"));
  ASSERT_TRUE(p.waitParked(1));
  EXPECT_EQ(p.releaseAll(), 1u);
  auto a = c.readResponse();
  auto b = c.readResponse();
  auto e = c.readResponse();
  ASSERT_TRUE(a && b && e);
  EXPECT_EQ(a->body, "/park/a");
  EXPECT_EQ(b->body.substr(0, 6), "GET /b");
  EXPECT_EQ(e->body, "xyz");
}

struct LimitCase {
  std::string request;
  int status;
  std::string reason;
};

TEST(HttpServerTest, LimitsAndMalformedRequestsGetJsonErrorsAndTheServerLivesOn) {
  Parking p;
  ServerOptions o = smallOptions();
  o.maxBodyBytes = 1000;
  o.bodyLimit = [](const Request& head) -> size_t { return head.path == "/big" ? 5000 : 1000; };
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  const std::string hugeHeader(17 << 10, 'h');
  const LimitCase cases[] = {
      // Only the head is sent: 413 comes at once, without the body.
      {"PUT /echo HTTP/1.1\r\nContent-Length: 2000\r\n\r\n", 413,
       "request body of 2000 bytes exceeds the limit of 1000 bytes"},
      {"PUT /big HTTP/1.1\r\nContent-Length: 6000\r\n\r\n", 413, "exceeds the limit of 5000 bytes"},
      {"PUT /echo HTTP/1.1\r\nContent-Length: 1000000000000000\r\n\r\n", 413,
       "request body of 1000000000000000 bytes exceeds the limit of 1000 bytes"},
      {"PUT /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400, "Content-Length '-5'"},
      {"PUT /echo HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n", 400, "Content-Length '12abc'"},
      {"PUT /echo HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400, "fits 64 bits"},
      {"PUT /echo HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400, "conflicting Content-Length"},
      {"PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 411, "chunked request bodies"},
      {"PUT /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "unsupported Transfer-Encoding"},
      {"GET /x HTTP/1.1\r\nX-Big: " + hugeHeader + "\r\n\r\n", 431, "exceeds the limit of 16384 bytes"},
      {"GET /x HTTP/1.1\r\nX-Big: " + hugeHeader, 431, "exceeds the limit of 16384 bytes"},  // never ends
      {"GARBAGE\r\n\r\n", 400, "malformed request line"},
      {"GET /x HTTP/2.0\r\n\r\n", 505, "not supported"},
      {"GET x HTTP/1.1\r\n\r\n", 400, "malformed request target"},
      {"GET /x HTTP/1.1\r\nno colon here\r\n\r\n", 400, "malformed header line"},
      {"GET /x HTTP/1.1\r\n folded: x\r\n\r\n", 400, "folding"},
  };
  for (const auto& c : cases) {
    RawConnection conn(server.port());
    ASSERT_TRUE(conn.send(c.request));
    auto r = conn.readResponse();
    ASSERT_TRUE(r) << c.request.substr(0, 60);
    EXPECT_EQ(r->status, c.status) << c.request.substr(0, 60) << " -> " << r->body;
    EXPECT_EQ(r->body.rfind("{\"error\":\"", 0), 0u) << r->body;
    EXPECT_NE(r->body.find(c.reason), std::string::npos) << c.request.substr(0, 60) << " -> " << r->body;
    EXPECT_EQ(r->header("content-type"), "application/json");
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_TRUE(conn.waitForClose()) << c.request.substr(0, 60);
  }
  // Bodies within their limits are served, on a server that is still up.
  RawConnection ok(server.port());
  ASSERT_TRUE(ok.send("PUT /big HTTP/1.1\r\nContent-Length: 3000\r\n\r\n" + std::string(3000, 'b')));
  auto r = ok.readResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), 3000u);
  EXPECT_EQ(get(ok, "/after").substr(0, 14), "200 GET /after");
}

TEST(HttpServerTest, OversizedBodyFromARealClientGets413NamingTheLimit) {
  Parking p;
  ServerOptions o = smallOptions();
  o.maxBodyBytes = 64 << 10;
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  // The client sends 4 MiB the server never reads: lingering close lets it finish and read 413.
  httplib::Client client("127.0.0.1", server.port());
  auto r = client.Put("/echo", std::string(4 << 20, 'x'), "application/octet-stream");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("request body of 4194304 bytes exceeds the limit of 65536 bytes"), std::string::npos) << r->body;
}

TEST(HttpServerTest, ExpectContinueIsAnsweredBeforeTheBody) {
  Parking p;
  Server server(smallOptions(), p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  ASSERT_TRUE(c.send("PUT /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto cont = c.readResponse();
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.send("hello"));
  auto r = c.readResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
}

TEST(HttpServerTest, TwoHundredIdleConnectionsDoNotStopANewClient) {
  testing::raiseFdLimit();
  Parking p;
  ServerOptions o = smallOptions();
  o.handlerThreads = 1;
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  constexpr int kIdle = 200;
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(idle.back()->ok());
    // Half of them sent half a request head, half nothing at all.
    if (i % 2 == 0) ASSERT_TRUE(idle.back()->send("GET /slow/" + std::to_string(i) + " HTTP/1.1\r\nHost:"));
  }
  httplib::Client client("127.0.0.1", server.port());
  auto start = std::chrono::steady_clock::now();
  auto r = client.Get("/fresh");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  // None was dropped: each one now finishes its request and is answered.
  for (int i = 0; i < kIdle; ++i) {
    const std::string rest = i % 2 == 0 ? " t\r\n\r\n" : "GET /slow/" + std::to_string(i) + " HTTP/1.1\r\n\r\n";
    ASSERT_TRUE(idle[i]->send(rest));
  }
  for (int i = 0; i < kIdle; ++i) {
    auto resp = idle[i]->readResponse();
    ASSERT_TRUE(resp) << i;
    EXPECT_EQ(resp->body.substr(0, 10 + std::to_string(i).size()), "GET /slow/" + std::to_string(i));
  }
}

TEST(HttpServerTest, RequestTimeoutClosesAHalfSentRequest) {
  Parking p;
  ServerOptions o = smallOptions();
  o.requestTimeout = std::chrono::milliseconds(300);
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.send("PUT /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"));  // 7 bytes never come
  auto r = c.readResponse(std::chrono::seconds(3));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(r->body.find("not received completely within 300ms"), std::string::npos) << r->body;
  EXPECT_TRUE(c.waitForClose());
  EXPECT_GE(took, std::chrono::milliseconds(290));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterIdleTimeout) {
  Parking p;
  ServerOptions o = smallOptions();
  o.idleTimeout = std::chrono::milliseconds(200);
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  EXPECT_EQ(get(c, "/one").substr(0, 3), "200");
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.waitForClose(std::chrono::seconds(3)));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST(HttpServerTest, AtTheConnectionCapTheLongestIdleConnectionMakesRoom) {
  Parking p;
  ServerOptions o = smallOptions();
  o.maxConnections = 3;
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection oldest(server.port());
  EXPECT_EQ(get(oldest, "/a").substr(0, 3), "200");
  RawConnection second(server.port());
  EXPECT_EQ(get(second, "/b").substr(0, 3), "200");
  RawConnection busy(server.port());
  ASSERT_TRUE(busy.send("GET /park/c HTTP/1.1\r\n\r\n"));  // in flight: never evicted
  ASSERT_TRUE(p.waitParked(1));
  RawConnection fresh(server.port());
  EXPECT_EQ(get(fresh, "/d").substr(0, 3), "200");
  EXPECT_TRUE(oldest.waitForClose());
  EXPECT_EQ(get(second, "/b2").substr(0, 3), "200");
  EXPECT_EQ(p.releaseAll(), 1u);
  auto r = busy.readResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "/park/c");
}

// Note [Two listeners]: half-sent requests from one address hold at most
// maxConnectionsPerClient connections; the next from that address is refused with 503 at once,
// and each connection the server ends itself is reported to onDropped with its reason.
TEST(HttpServerTest, OneAddressHoldsAtMostItsPerClientConnectionsAndDropsAreReported) {
  Parking p;
  ServerOptions o = smallOptions();
  o.maxConnections = 100;
  o.maxConnectionsPerClient = 4;
  o.requestTimeout = std::chrono::milliseconds(300);
  std::mutex mu;
  std::map<std::string, int> drops;
  o.onDropped = [&](const char* reason) {
    std::lock_guard<std::mutex> lock(mu);
    ++drops[reason];
  };
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  std::vector<std::unique_ptr<RawConnection>> partial;
  for (int i = 0; i < 4; ++i) {
    partial.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(partial.back()->send("GET /slow HTTP/1.1\r\nHo"));
  }
  RawConnection fifth(server.port());
  auto refused = fifth.readResponse(std::chrono::seconds(3));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many connections from 127.0.0.1 (at most 4 per client address)"),
            std::string::npos) << refused->body;
  // The half-sent ones time out (408); then the address may connect again.
  for (auto& c : partial) {
    auto r = c->readResponse(std::chrono::seconds(3));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c->waitForClose());
  }
  for (int i = 0; i < 50 && server.connectionCount() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  RawConnection again(server.port());
  EXPECT_EQ(get(again, "/again").substr(0, 3), "200");
  RawConnection bad(server.port());
  ASSERT_TRUE(bad.send("NONSENSE\r\n\r\n"));
  auto malformed = bad.readResponse();
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(drops["per_client"], 1);
  EXPECT_EQ(drops["timeout"], 4);
  EXPECT_EQ(drops["malformed"], 1);
  EXPECT_EQ(drops["capacity"], 0);
}

TEST(HttpServerTest, RefusalsAtTheGlobalCapAreReportedAsCapacity) {
  Parking p;
  ServerOptions o = smallOptions();
  o.maxConnections = 2;
  std::atomic<int> capacity{0};
  o.onDropped = [&](const char* reason) {
    if (std::string(reason) == "capacity") capacity.fetch_add(1);
  };
  Server server(o, p.handler());
  ASSERT_TRUE(server.start().isOk());
  RawConnection a(server.port()), b(server.port());
  ASSERT_TRUE(a.send("GET /park/a HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(b.send("GET /park/b HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(p.waitParked(2));  // both in flight: none idle to evict
  RawConnection c(server.port());
  auto r = c.readResponse(std::chrono::seconds(3));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(capacity.load(), 1);
  EXPECT_EQ(p.releaseAll(), 2u);
}

TEST(HttpServerTest, ClientGoingAwayClosesItsDeferredResponder) {
  Parking p;
  Server server(smallOptions(), p.handler());
  ASSERT_TRUE(server.start().isOk());
  {
    RawConnection c(server.port());
    ASSERT_TRUE(c.send("GET /park/gone HTTP/1.1\r\n\r\n"));
    ASSERT_TRUE(p.waitParked(1));
  }  // closed
  auto responders = p.responders();
  ASSERT_EQ(responders.size(), 1u);
  ASSERT_TRUE(p.waitClosed(1));
  EXPECT_TRUE(responders[0]->closed());
  EXPECT_FALSE(responders[0]->reply(Response::text(200, "late")));
}

TEST(HttpServerTest, StopWithPendingDeferredRepliesReturnsPromptly) {
  Parking p;
  auto server = std::make_unique<Server>(smallOptions(), p.handler());
  ASSERT_TRUE(server->start().isOk());
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < 20; ++i) {
    conns.push_back(std::make_unique<RawConnection>(server->port()));
    ASSERT_TRUE(conns.back()->send("GET /park/" + std::to_string(i) + " HTTP/1.1\r\n\r\n"));
  }
  ASSERT_TRUE(p.waitParked(20));
  auto start = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_FALSE(server->running());
  EXPECT_EQ(p.closedWhileParked(), 20);
  for (auto& r : p.responders()) {
    EXPECT_TRUE(r->closed());
    EXPECT_FALSE(r->reply(Response::text(200, "late")));
  }
  for (auto& c : conns) EXPECT_TRUE(c->waitForClose());
  server->stop();  // idempotent
  EXPECT_EQ(server->start().code(), StatusCode::kFailedPrecondition);
  server.reset();
  // Responders outlive the server.
  for (auto& r : p.responders()) EXPECT_FALSE(r->write("x"));
}

TEST(HttpServerTest, StreamedResponseIsReadByAClient) {
  std::vector<std::thread> writers;
  std::mutex mu;
  Handler h = [&](Request&, std::shared_ptr<Responder> r) {
    ASSERT_TRUE(r->startStream(200, "text/plain", {{"X-Stream", "yes"}}));
    EXPECT_TRUE(r->write("first,"));
    std::lock_guard<std::mutex> lock(mu);
    writers.emplace_back([r] {  // the rest comes later from another thread
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(r->write("chunk" + std::to_string(i) + ","));
      EXPECT_TRUE(r->write(""));
      r->finish();
      EXPECT_FALSE(r->write("after finish"));
    });
  };
  Server server(smallOptions(), h);
  ASSERT_TRUE(server.start().isOk());
  httplib::Client client("127.0.0.1", server.port());
  auto r = client.Get("/events");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "first,chunk0,chunk1,chunk2,");
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->get_header_value("X-Stream"), "yes");
  auto again = client.Get("/events");  // the connection is still good after a stream
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, "first,chunk0,chunk1,chunk2,");
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : writers) t.join();
}

TEST(HttpServerTest, DroppedOrThrowingHandlersAnswer500) {
  Handler h = [](Request& req, std::shared_ptr<Responder>) {
    if (req.path == "/throw") throw std::runtime_error("boom");
    // "/drop": the responder is released without a reply
  };
  Server server(smallOptions(), h);
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  EXPECT_EQ(get(c, "/drop"), "500 {\"error\":\"the handler dropped the request without replying\"}");
  EXPECT_EQ(get(c, "/throw"), "500 {\"error\":\"internal error: boom\"}");
}

TEST(HttpServerTest, RequestFieldsAreParsed) {
  Request seen;
  std::mutex mu;
  Handler h = [&](Request& req, std::shared_ptr<Responder> r) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen = req;
    }
    r->reply(Response::text(200, "ok"));
  };
  Server server(smallOptions(), h);
  ASSERT_TRUE(server.start().isOk());
  RawConnection c(server.port());
  ASSERT_TRUE(c.send("POST /a%20b/c?k=1&k=two+2&e=%2F&flag HTTP/1.1\r\nX-Thing:  v1 \r\nx-thing: v2\r\n"
                     "Content-Length: 4\r\n\r\nbody"));
  auto r = c.readResponse();
  ASSERT_TRUE(r);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/a%20b/c?k=1&k=two+2&e=%2F&flag");
  EXPECT_EQ(seen.path, "/a b/c");
  EXPECT_EQ(seen.queryValue("k").value_or("?"), "1");
  EXPECT_EQ(seen.queryValues("k"), (std::vector<std::string>{"1", "two 2"}));
  EXPECT_EQ(seen.queryValue("e").value_or("?"), "/");
  EXPECT_EQ(seen.queryValue("flag").value_or("?"), "");
  EXPECT_FALSE(seen.queryValue("none").has_value());
  EXPECT_EQ(seen.header("X-THING"), "v1");
  EXPECT_EQ(seen.header("absent"), "");
  EXPECT_EQ(seen.body, "body");
  EXPECT_EQ(seen.remoteAddress.rfind("127.0.0.1:", 0), 0u) << seen.remoteAddress;
}

TEST(HttpServerTest, BindFailureIsUnavailableNamingTheAddressAndOptionsAreValidated) {
  Parking p;
  Server first(smallOptions(), p.handler());
  ASSERT_TRUE(first.start().isOk());
  ServerOptions o = smallOptions();
  o.port = first.port();
  Server second(o, p.handler());
  Status st = second.start();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(first.port())), std::string::npos) << st;
  ServerOptions bad;
  bad.handlerThreads = 0;
  EXPECT_EQ(bad.validate().code(), StatusCode::kInvalidArgument);
  bad = ServerOptions{};
  bad.port = 70000;
  EXPECT_EQ(Server(bad, p.handler()).start().code(), StatusCode::kInvalidArgument);
}

TEST(HttpServerTest, InlineRoutesRunOnTheEventLoopOthersOnThePool) {
  // The loop thread is the one that serves the first inline request; every later inline request
  // must come from the same thread, and no pooled request from it.
  std::mutex mu;
  std::set<std::thread::id> inlineThreads, pooledThreads;
  std::thread replier;  // joined below
  ServerOptions o = smallOptions();
  o.runInline = [](const Request& r) { return r.path.rfind("/fast", 0) == 0; };
  Server server(o, [&](Request& req, std::shared_ptr<Responder> res) {
    {
      std::lock_guard<std::mutex> lock(mu);
      (req.path.rfind("/fast", 0) == 0 ? inlineThreads : pooledThreads).insert(std::this_thread::get_id());
    }
    if (req.path == "/fast/throw") throw std::runtime_error("boom");
    if (req.path == "/fast/later") {
      replier = std::thread([res] { res->reply(Response::text(200, "later")); });  // a deferred reply
      return;
    }
    res->reply(Response::text(200, "ok " + req.path));
  });
  ASSERT_TRUE(server.start().isOk());
  httplib::Client client("127.0.0.1", server.port());
  for (int i = 0; i < 20; ++i) {
    auto a = client.Get("/fast/x");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "ok /fast/x");
    auto b = client.Get("/slow/y");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->body, "ok /slow/y");
  }
  auto later = client.Get("/fast/later");
  if (replier.joinable()) replier.join();
  ASSERT_TRUE(later);
  EXPECT_EQ(later->body, "later");
  auto thrown = client.Get("/fast/throw");
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->status, 500) << "an inline handler that throws answers 500 and the loop lives on";
  EXPECT_EQ(client.Get("/fast/x")->status, 200);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(inlineThreads.size(), 1u) << "every inline request ran on the one event-loop thread";
  EXPECT_FALSE(pooledThreads.empty());
  for (const auto& t : pooledThreads) EXPECT_EQ(inlineThreads.count(t), 0u);
}

}  // namespace
}  // namespace ddp::http
