// StoreService mounted the way the controller mounts it (one KeySpace per job generation under
// /v1/jobs/{name}/generations/{g}/store/{op}, bearer token, fencing), driven by HttpStoreClient
// and raw sockets over loopback.
#include "common/store/store_service.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/http/http_router.h"
#include "common/store/http_store_client.h"
#include "tests/unit/http/raw_http_client.h"

namespace ddp::comm {
namespace {

using http::testing::RawConnection;

constexpr const char* kToken = "s3cret";

// A stand-in for the controller: job "fm", current generation 2 (older ones are fenced).
class ControllerLike {
 public:
  explicit ControllerLike(StoreServiceOptions so = {}, int handlerThreads = 2, size_t quota = kNoQuota)
      : service_(so), space_(std::make_shared<KeySpace>(quota)) {
    for (const char* m : {"GET", "PUT", "POST", "DELETE"}) {
      router_.add(m, "/v1/jobs/{name}/generations/{g}/store/{op}",
                  [this](http::Request& req, std::shared_ptr<http::Responder> r) { route(req, std::move(r)); });
    }
    http::ServerOptions o;
    o.handlerThreads = handlerThreads;
    o.bodyLimit = [limit = service_.bodyLimit()](const http::Request&) { return limit; };
    server_ = std::make_unique<http::Server>(o, router_.handler());
    Status st = server_->start();
    EXPECT_TRUE(st.isOk()) << st;
  }
  ~ControllerLike() { server_->stop(); }

  int port() const { return server_->port(); }
  KeySpace& space() { return *space_; }
  std::string basePath(int generation = 2) const {
    return "/v1/jobs/fm/generations/" + std::to_string(generation) + "/store";
  }
  HttpStoreClientOptions clientOptions(int generation = 2) const {
    HttpStoreClientOptions o;
    o.basePath = basePath(generation);
    o.bearerToken = kToken;
    o.requestTimeout = std::chrono::seconds(10);
    o.longPoll = std::chrono::seconds(5);
    return o;
  }
  HttpStoreClient client(int generation = 2) const { return HttpStoreClient("127.0.0.1", port(), clientOptions(generation)); }

  // Waits until `n` long-poll GETs (value or wait) were handed to the service.
  bool waitLongPolls(int n, Duration timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return longPolls_ >= n; });
  }

 private:
  void route(http::Request& req, std::shared_ptr<http::Responder> r) {
    if (req.header("Authorization") != std::string("Bearer ") + kToken) {
      r->reply(http::Response::text(401, "missing or wrong bearer token"));
      return;
    }
    if (req.params.at("name") != "fm" || req.params.at("g") != "2") {
      r->reply(http::Response::text(410, "job fm generation " + req.params.at("g") + " is over (current: 2)"));
      return;
    }
    const bool longPoll = req.method == "GET" && req.params.at("op") != "check" && req.queryValue("wait_ms");
    service_.handle(space_, req.params.at("op"), req, std::move(r));
    if (longPoll) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++longPolls_;
      }
      cv_.notify_all();
    }
  }

  StoreService service_;
  std::shared_ptr<KeySpace> space_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  int longPolls_ = 0;  // guarded by mu_
};

TEST(StoreServiceTest, ClientWorksUnderTheControllerPathWithAToken) {
  ControllerLike c;
  HttpStoreClient client = c.client();
  ASSERT_TRUE(client.set("a/b c", "v").isOk());
  EXPECT_EQ(client.get("a/b c", Deadline::after(std::chrono::seconds(2))).valueOr("?"), "v");
  EXPECT_EQ(client.add("n", 5).valueOr(0), 5);
  EXPECT_TRUE(client.wait({"a/b c", "n"}, Deadline::after(std::chrono::seconds(2))).isOk());
  EXPECT_EQ(c.space().get("n").value_or("?"), "5");
}

TEST(StoreServiceTest, StatusMappingForAuthFencingAndQuota) {
  ControllerLike c(StoreServiceOptions{}, 2, /*quota=*/100);
  HttpStoreClientOptions noToken = c.clientOptions();
  noToken.bearerToken.clear();
  HttpStoreClient anonymous("127.0.0.1", c.port(), noToken);
  Status st = anonymous.set("k", "v");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("wrong bearer token"), std::string::npos) << st;

  HttpStoreClient stale = c.client(/*generation=*/1);
  st = stale.set("k", "v");
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st;
  EXPECT_EQ(st.message().rfind("fenced: stale generation", 0), 0u) << st;
  EXPECT_NE(st.message().find("generation 1 is over"), std::string::npos) << st;
  auto got = stale.get("k", Deadline::after(std::chrono::seconds(1)));
  EXPECT_EQ(got.status().code(), StatusCode::kAborted) << got.status();

  HttpStoreClient client = c.client();
  ASSERT_TRUE(client.set("k", std::string(50, 'x')).isOk());
  st = client.set("k2", std::string(60, 'y'));
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st;
  EXPECT_NE(st.message().find("quota of 100 bytes"), std::string::npos) << st;
  EXPECT_EQ(client.add("n", 1).status().code(), StatusCode::kOk);
}

TEST(StoreServiceTest, KeySpaceQuotaRefusesWritesPastIt) {
  constexpr size_t kValue = 16u << 20;
  constexpr size_t kQuota = 3 * kValue + 1024;  // three values and their keys fit, a fourth does not
  ControllerLike c(StoreServiceOptions{}, 2, kQuota);
  // 20 x 16 MiB over one keep-alive connection (raw: the test's own client would spend most of
  // the time copying the values).
  const std::string value(kValue, 'v');
  RawConnection conn(c.port());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(conn.send("PUT " + c.basePath() + "/value?key=blob" + std::to_string(i) +
                          " HTTP/1.1\r\nAuthorization: Bearer " + kToken + "\r\nContent-Length: " +
                          std::to_string(kValue) + "\r\n\r\n"));
    ASSERT_TRUE(conn.send(value));
    auto r = conn.readResponse(std::chrono::seconds(10));
    ASSERT_TRUE(r) << i;
    if (i < 3) {
      EXPECT_EQ(r->status, 200) << i << ": " << r->body;
    } else {
      EXPECT_EQ(r->status, 507) << i << ": " << r->body;
      EXPECT_NE(r->body.find("quota of " + std::to_string(kQuota) + " bytes"), std::string::npos) << r->body;
    }
  }
  EXPECT_LE(c.space().bytes(), kQuota);
  EXPECT_EQ(c.space().numKeys(), 3u);
  // Through the client: 507 is OutOfRange with the server's reason.
  HttpStoreClient client = c.client();
  Status st = client.set("one-more", std::string(2048, 'x'));
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st;
  EXPECT_NE(st.message().find("quota of " + std::to_string(kQuota) + " bytes"), std::string::npos) << st;
  // Overwriting with a smaller value is allowed near the quota, and frees room.
  EXPECT_TRUE(client.set("blob0", "small").isOk());
  EXPECT_TRUE(client.set("one-more", std::string(2048, 'x')).isOk());
}

TEST(StoreServiceTest, AddOverflowIsRefused) {
  ControllerLike c;
  HttpStoreClient client = c.client();
  EXPECT_EQ(client.add("n", INT64_MAX).valueOr(0), INT64_MAX);
  auto over = client.add("n", 1);
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument) << over.status();
  EXPECT_NE(over.status().message().find("add of 1 to 9223372036854775807 overflows int64"), std::string::npos)
      << over.status();
  EXPECT_EQ(client.add("m", INT64_MIN).valueOr(0), INT64_MIN);
  EXPECT_EQ(client.add("m", -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.space().get("n").value_or("?"), "9223372036854775807");  // unchanged
  // On the wire: 409 with the reason.
  httplib::Client raw("127.0.0.1", c.port());
  raw.set_url_encode(false);
  auto r = raw.Post(c.basePath() + "/add?key=n&delta=1", {{"Authorization", std::string("Bearer ") + kToken}}, "",
                    "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409);
  EXPECT_NE(r->body.find("overflows int64"), std::string::npos) << r->body;
}

TEST(StoreServiceTest, BadContentLengthsAndOversizedBodiesAreRefusedWithTheRightLimit) {
  StoreServiceOptions so;
  so.maxValueBytes = 1000;  // body limit 2 * 1000 + 1024 = 3024
  ControllerLike c(so);
  const std::string head = "PUT " + c.basePath() + "/value?key=k HTTP/1.1\r\nAuthorization: Bearer " + kToken + "\r\n";
  struct Case {
    std::string extraHeaders;
    std::string body;
    int status;
    std::string reason;
  };
  const Case cases[] = {
      {"Content-Length: -1\r\n", "", 400, "Content-Length '-1'"},
      {"Content-Length: 18446744073709551616\r\n", "", 400, "Content-Length '18446744073709551616'"},
      {"Content-Length: 18446744073709551615\r\n", "", 413, "exceeds the limit of 3024 bytes"},
      // Form-encoded bodies get the same limits as any other (the old server quoted another one).
      {"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n", std::string(5000, 'f'), 413,
       "request body of 5000 bytes exceeds the limit of 3024 bytes"},
      {"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 2000\r\n", std::string(2000, 'f'), 413,
       "value of 2000 bytes exceeds the limit of 1000"},
  };
  for (const auto& cs : cases) {
    RawConnection conn(c.port());
    ASSERT_TRUE(conn.send(head + cs.extraHeaders + "\r\n" + cs.body));
    auto r = conn.readResponse();
    ASSERT_TRUE(r) << cs.extraHeaders;
    EXPECT_EQ(r->status, cs.status) << cs.extraHeaders << " -> " << r->body;
    EXPECT_NE(r->body.find(cs.reason), std::string::npos) << cs.extraHeaders << " -> " << r->body;
  }
  EXPECT_EQ(c.space().numKeys(), 0u);
  HttpStoreClient client = c.client();
  EXPECT_TRUE(client.set("k", std::string(1000, 'o')).isOk());
}

TEST(StoreServiceTest, IdleHalfOpenConnectionsDoNotStallTheStore) {
  http::testing::raiseFdLimit();
  ControllerLike c;
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(std::make_unique<RawConnection>(c.port()));
    ASSERT_TRUE(idle.back()->ok()) << i;
    // A third send half a head, a third a head announcing a body that never comes, a third nothing.
    if (i % 3 == 0) ASSERT_TRUE(idle.back()->send("GET " + c.basePath() + "/value?key=k HTTP/1.1\r\nAuthoriz"));
    if (i % 3 == 1) {
      ASSERT_TRUE(idle.back()->send("PUT " + c.basePath() + "/value?key=k HTTP/1.1\r\nContent-Length: 100\r\n\r\nab"));
    }
  }
  HttpStoreClient client = c.client();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(client.set("k" + std::to_string(i), "v").isOk());
    ASSERT_EQ(client.get("k" + std::to_string(i), Deadline::after(std::chrono::seconds(2))).valueOr("?"), "v");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(c.space().numKeys(), 20u);  // the half-sent PUTs stored nothing
}

TEST(StoreServiceTest, BlockingGetPastItsDeadlineIsTimeoutNamingTheKey) {
  ControllerLike c;
  HttpStoreClientOptions o = c.clientOptions();
  o.longPoll = std::chrono::milliseconds(100);  // several polls before the deadline
  HttpStoreClient client("127.0.0.1", c.port(), o);
  const auto start = std::chrono::steady_clock::now();
  auto got = client.get("slow-key", Deadline::after(std::chrono::milliseconds(400)));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout) << got.status();
  EXPECT_NE(got.status().message().find("'slow-key'"), std::string::npos) << got.status();
  EXPECT_GE(took, std::chrono::milliseconds(390));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  ASSERT_TRUE(client.set("here", "1").isOk());
  Status w = client.wait({"here", "slow-a", "slow-b"}, Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_EQ(w.code(), StatusCode::kTimeout) << w;
  EXPECT_NE(w.message().find("slow-a, slow-b"), std::string::npos) << w;
  EXPECT_EQ(c.space().numWaiters(), 0u);  // every long poll ended with its hold
}

TEST(StoreServiceTest, FiveHundredBlockingGetsAreReleasedByOneSetOnTwoThreads) {
  http::testing::raiseFdLimit();
  StoreServiceOptions so;
  so.maxLongPoll = std::chrono::seconds(10);  // every get stays in its first hold
  ControllerLike c(so, /*handlerThreads=*/2);
  constexpr int kReaders = 500;
  std::vector<std::thread> readers;
  std::vector<Result<std::string>> got(kReaders, Result<std::string>(internalError("not run")));
  HttpStoreClientOptions o = c.clientOptions();
  o.longPoll = std::chrono::seconds(10);
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] {
      HttpStoreClient client("127.0.0.1", c.port(), o);
      got[i] = client.get("rendezvous", Deadline::after(std::chrono::seconds(20)));
    });
  }
  const bool allWaiting = c.waitLongPolls(kReaders);
  EXPECT_TRUE(allWaiting);
  EXPECT_EQ(c.space().numWaiters(), static_cast<size_t>(kReaders));
  // The two handler threads hold none of them: a short request is served at once.
  HttpStoreClient writer = c.client();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(writer.check({"x"}).isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  ASSERT_TRUE(writer.set("rendezvous", "addr").isOk());  // the one set
  for (auto& t : readers) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  for (int i = 0; i < kReaders; ++i) {
    ASSERT_TRUE(got[i].isOk()) << i << ": " << got[i].status();
    EXPECT_EQ(*got[i], "addr");
  }
  EXPECT_EQ(c.space().numWaiters(), 0u);
}

TEST(StoreServiceTest, ClearingTheKeySpaceFencesItsLongPolls) {
  ControllerLike c;
  HttpStoreClient client = c.client();
  Result<std::string> got(internalError("not run"));
  std::thread t([&] { got = client.get("never", Deadline::after(std::chrono::seconds(10))); });
  ASSERT_TRUE(c.waitLongPolls(1));
  c.space().clear("generation 2 was fenced");
  t.join();
  EXPECT_EQ(got.status().code(), StatusCode::kAborted) << got.status();
  EXPECT_NE(got.status().message().find("generation 2 was fenced"), std::string::npos) << got.status();
}

TEST(StoreServiceTest, AClientThatGoesAwayDropsItsWaiter) {
  ControllerLike c;
  {
    RawConnection conn(c.port());
    ASSERT_TRUE(conn.send("GET " + c.basePath() + "/value?key=k&wait_ms=10000 HTTP/1.1\r\nAuthorization: Bearer " +
                          kToken + "\r\n\r\n"));
    ASSERT_TRUE(c.waitLongPolls(1));
    EXPECT_EQ(c.space().numWaiters(), 1u);
  }
  // The key space has no event for this: poll its waiter count for at most 5 s.
  const Deadline deadline = Deadline::after(std::chrono::seconds(5));
  while (c.space().numWaiters() != 0 && !deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(c.space().numWaiters(), 0u);
}

TEST(StoreServiceTest, UnknownOperationsAndMethods) {
  ControllerLike c;
  httplib::Client raw("127.0.0.1", c.port());
  const httplib::Headers auth{{"Authorization", std::string("Bearer ") + kToken}};
  auto r = raw.Get(c.basePath() + "/frobnicate?key=k", auth);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_FALSE(r->has_header("X-Ddp-Store"));
  EXPECT_NE(r->body.find("no such store operation 'frobnicate'"), std::string::npos) << r->body;
  r = raw.Get(c.basePath() + "/add?key=k&delta=1", auth);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
}

}  // namespace
}  // namespace ddp::comm
