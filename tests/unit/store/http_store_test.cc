// HttpStoreServer + HttpStoreClient over a real loopback server on port 0.
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/store_conformance.h"
#include "common/store/http_store_client.h"
#include "common/store/http_store_server.h"
#include "common/store/in_memory_store.h"
#include "common/store/prefix_store.h"

namespace ddp::comm {
namespace {

HttpStoreClientOptions fastClient() {
  HttpStoreClientOptions o;
  o.requestTimeout = 5s;
  o.longPoll = 200ms;
  return o;
}

class HttpStoreUnderTest final : public conformance::StoreUnderTest {
 public:
  explicit HttpStoreUnderTest(std::string prefix = "") : prefix_(std::move(prefix)) {
    Status st = server_.start();
    EXPECT_TRUE(st.isOk()) << st;
  }
  std::shared_ptr<Store> connect() override {
    auto client = std::make_shared<HttpStoreClient>("127.0.0.1", server_.port(), fastClient());
    if (prefix_.empty()) return client;
    return std::make_shared<PrefixStore>(prefix_, client);
  }

 private:
  HttpStoreServer server_;
  std::string prefix_;
};

DDP_STORE_CONFORMANCE_TESTS(HttpStoreConformance, [] { return std::make_unique<HttpStoreUnderTest>(); })
DDP_STORE_CONFORMANCE_TESTS(PrefixOverHttpStoreConformance,
                            [] { return std::make_unique<HttpStoreUnderTest>("job/gen2/"); })

// Serving a backing Store (synchronously) passes the same checks.
class BackedHttpStoreUnderTest final : public conformance::StoreUnderTest {
 public:
  BackedHttpStoreUnderTest() : server_(HttpStoreServerOptions{}, std::make_shared<InMemoryStore>()) {
    Status st = server_.start();
    EXPECT_TRUE(st.isOk()) << st;
  }
  std::shared_ptr<Store> connect() override {
    return std::make_shared<HttpStoreClient>("127.0.0.1", server_.port(), fastClient());
  }

 private:
  HttpStoreServer server_;
};

DDP_STORE_CONFORMANCE_TESTS(BackedHttpStoreConformance, [] { return std::make_unique<BackedHttpStoreUnderTest>(); })

HttpStoreServerOptions smallServer() {
  HttpStoreServerOptions o;
  o.maxValueBytes = 1000;
  o.maxKeyBytes = 64;
  o.maxLongPoll = 100ms;
  o.threads = 8;
  return o;
}

TEST(HttpStoreTest, BlockingGetSpansSeveralLongPolls) {
  HttpStoreServer server(smallServer());  // the server holds each request at most 100 ms
  ASSERT_TRUE(server.start().isOk());
  HttpStoreClient waiter("127.0.0.1", server.port(), fastClient());
  HttpStoreClient setter("127.0.0.1", server.port(), fastClient());
  std::thread t([&] {
    std::this_thread::sleep_for(350ms);
    EXPECT_TRUE(setter.set("nccl_id", std::string(128, '\x01')).isOk());
  });
  auto got = waiter.get("nccl_id", Deadline::after(10s));
  t.join();
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_EQ(*got, std::string(128, '\x01'));
  // The embedding process sees the same keys directly.
  EXPECT_TRUE(*server.store().check({"nccl_id"}));
}

TEST(HttpStoreTest, SetsAreServedWhileEveryPollThreadIsHeld) {
  HttpStoreServerOptions so;
  so.threads = 2;  // long polls hold no handler thread
  so.maxLongPoll = 2s;
  HttpStoreServer server(so);
  ASSERT_TRUE(server.start().isOk());
  HttpStoreClientOptions co = fastClient();
  co.longPoll = 2s;
  constexpr int kReaders = 6;  // more blocking readers than poll threads
  std::vector<std::thread> readers;
  std::vector<Result<std::string>> got(kReaders, Result<std::string>(internalError("not run")));
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&, i] {
      HttpStoreClient c("127.0.0.1", server.port(), co);
      got[i] = c.get("key" + std::to_string(i), Deadline::after(10s));
    });
  }
  std::this_thread::sleep_for(200ms);  // let the readers occupy the poll threads
  HttpStoreClient writer("127.0.0.1", server.port(), co);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReaders; ++i) ASSERT_TRUE(writer.set("key" + std::to_string(i), "v").isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);  // never queued behind a long poll
  for (auto& t : readers) t.join();
  for (int i = 0; i < kReaders; ++i) {
    ASSERT_TRUE(got[i].isOk()) << i << ": " << got[i].status();
    EXPECT_EQ(*got[i], "v");
  }
}

TEST(HttpStoreTest, ManyClientsConnectingAtOnceAllSucceed) {
  // A rendezvous makes every rank connect at the same moment (Note [Listen backlog]).
  HttpStoreServer server;
  ASSERT_TRUE(server.start().isOk());
  constexpr int kClients = 48;
  std::vector<std::thread> threads;
  std::vector<Status> results(kClients);
  std::atomic<int> ready{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      HttpStoreClient c("127.0.0.1", server.port(), fastClient());
      ++ready;
      while (ready.load() < kClients) std::this_thread::yield();
      results[i] = c.set("rank" + std::to_string(i), "addr");
      if (results[i].isOk()) results[i] = c.get("rank" + std::to_string((i + 1) % kClients), Deadline::after(10s)).status();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_TRUE(results[i].isOk()) << i << ": " << results[i];
}

// Raw HTTP requests (not through our client) that the server must reject with a reason.
TEST(HttpStoreTest, MalformedRequestsGet4xxWithReasonAndServerLivesOn) {
  HttpStoreServer server(smallServer());
  ASSERT_TRUE(server.start().isOk());
  httplib::Client raw("127.0.0.1", server.port());
  raw.set_url_encode(false);
  struct Case {
    std::string method, target, body;
    int status;
    std::string reason;
  };
  const Case cases[] = {
      {"GET", "/v1/store/value", "", 400, "missing query parameter 'key'"},
      {"PUT", "/v1/store/value?key=", "v", 400, "empty key"},
      {"PUT", "/v1/store/value?key=" + std::string(65, 'k'), "v", 400, "exceeds the limit of 64"},
      {"PUT", "/v1/store/value?key=a&key=b", "v", 400, "exactly one 'key'"},
      {"POST", "/v1/store/add?key=n", "", 400, "missing query parameter 'delta'"},
      {"POST", "/v1/store/add?key=n&delta=12abc", "", 400, "'12abc' is not a decimal int64"},
      {"POST", "/v1/store/add?key=n&delta=99999999999999999999", "", 400, "not a decimal int64"},
      {"GET", "/v1/store/value?key=k&wait_ms=-5", "", 400, "must be >= 0"},
      {"GET", "/v1/store/value?key=k&wait_ms=soon", "", 400, "'wait_ms'"},
      {"POST", "/v1/store/compare_set?key=c", "ab", 400, "missing query parameter 'expected_len'"},
      {"POST", "/v1/store/compare_set?key=c&expected_len=5", "ab", 400, "does not fit the body"},
      {"PUT", "/v1/store/value?key=big", std::string(1001, 'x'), 413, "value of 1001 bytes exceeds the limit of 1000"},
      {"PUT", "/v1/store/value?key=huge", std::string(5000, 'x'), 413,
       "request body of 5000 bytes exceeds the limit of 3024 bytes"},
      {"GET", "/v1/nothing", "", 404, "no such route: GET /v1/nothing"},
      {"GET", "/v1/store/nothing?key=k", "", 404, "no such store operation 'nothing'"},
      {"GET", "/v1/store/add?key=n&delta=1", "", 405, "does not take GET"},
  };
  for (const auto& c : cases) {
    httplib::Result r = c.method == "GET"    ? raw.Get(c.target.c_str())
                        : c.method == "PUT"  ? raw.Put(c.target.c_str(), c.body, "application/octet-stream")
                                             : raw.Post(c.target.c_str(), c.body, "application/octet-stream");
    ASSERT_TRUE(r) << c.target << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, c.status) << c.method << " " << c.target << " -> " << r->body;
    EXPECT_NE(r->body.find(c.reason), std::string::npos) << c.target << " -> " << r->body;
  }
  // Still serving, and nothing was stored by the rejected requests.
  HttpStoreClient client("127.0.0.1", server.port(), fastClient());
  ASSERT_TRUE(client.set("after", "ok").isOk());
  EXPECT_EQ(client.get("after", Deadline::after(2s)).valueOr("?"), "ok");
  EXPECT_FALSE(*client.check({"big"}));
  EXPECT_FALSE(*client.check({"huge"}));
  EXPECT_FALSE(*client.check({"n"}));
}

TEST(HttpStoreTest, ClientReportsRejectionsAsInvalidArgumentWithTheReason) {
  HttpStoreServer server(smallServer());
  ASSERT_TRUE(server.start().isOk());
  HttpStoreClient client("127.0.0.1", server.port(), fastClient());
  Status st = client.set("big", std::string(1001, 'x'));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("exceeds the limit of 1000"), std::string::npos) << st;
  st = client.set(std::string(65, 'k'), "v");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  auto cs = client.compareSet("c", "", std::string(1001, 'y'));
  EXPECT_EQ(cs.status().code(), StatusCode::kInvalidArgument) << cs.status();
  ASSERT_TRUE(client.set("ok", "1").isOk());
}

TEST(HttpStoreTest, UnreachableServerIsUnavailableNamingTheAddress) {
  int port = 0;
  {
    HttpStoreServer server;
    ASSERT_TRUE(server.start().isOk());
    port = server.port();
  }  // stopped: nothing listens on `port` now
  HttpStoreClientOptions o = fastClient();
  o.requestTimeout = 200ms;
  HttpStoreClient client("127.0.0.1", port, o);
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  auto start = std::chrono::steady_clock::now();
  Status st = client.set("k", "v");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_NE(st.message().find(addr), std::string::npos) << st;
  // A blocking get reaching its deadline is a Timeout naming the key, the server and the cause.
  auto got = client.get("k", Deadline::after(200ms));
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout) << got.status();
  EXPECT_NE(got.status().message().find("'k'"), std::string::npos) << got.status();
  EXPECT_NE(got.status().message().find(addr), std::string::npos) << got.status();
  EXPECT_NE(got.status().message().find("last error: "), std::string::npos) << got.status();
  Status waited = client.wait({"k1", "k2"}, Deadline::after(200ms));
  EXPECT_EQ(waited.code(), StatusCode::kTimeout) << waited;
  EXPECT_NE(waited.message().find("k1, k2"), std::string::npos) << waited;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(HttpStoreTest, ClientRetriesUntilTheServerComesUp) {
  // Pick a free port, then start a server on it only after the client began its get.
  int port = 0;
  {
    HttpStoreServer probe;
    ASSERT_TRUE(probe.start().isOk());
    port = probe.port();
  }
  HttpStoreServerOptions so;
  so.port = port;
  HttpStoreServer server(so);
  std::thread t([&] {
    std::this_thread::sleep_for(200ms);
    ASSERT_TRUE(server.start().isOk());
    ASSERT_TRUE(server.store().set("k", "v").isOk());
  });
  HttpStoreClient client("127.0.0.1", port, fastClient());
  auto got = client.get("k", Deadline::after(10s));
  t.join();
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_EQ(*got, "v");
}

TEST(HttpStoreTest, BlockingGetSurvivesAServerRestart) {
  auto backing = std::make_shared<InMemoryStore>();  // the state survives, as a durable store's would
  HttpStoreServerOptions so;
  so.maxLongPoll = 5s;
  auto first = std::make_unique<HttpStoreServer>(so, backing);
  ASSERT_TRUE(first->start().isOk());
  so.port = first->port();
  HttpStoreClientOptions co = fastClient();
  co.longPoll = 5s;
  HttpStoreClient client("127.0.0.1", so.port, co);
  Result<std::string> got(internalError("not run"));
  std::thread t([&] { got = client.get("late", Deadline::after(10s)); });
  std::this_thread::sleep_for(150ms);
  first->stop();  // the client's long poll is cut off mid-request
  first.reset();
  HttpStoreServer second(so, backing);
  ASSERT_TRUE(second.start().isOk());
  ASSERT_TRUE(backing->set("late", "value").isOk());
  t.join();
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_EQ(*got, "value");
}

// A fake for faults: a TCP listener that accepts every connection and closes it without a reply.
class DroppingListener {
 public:
  DroppingListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // the listening socket was shut down
        accepted_++;
        ::close(c);
      }
    });
  }
  ~DroppingListener() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST(HttpStoreTest, ReadOnlyRequestsRetryDroppedConnectionsMutatingOnesDoNot) {
  DroppingListener dropper;
  HttpStoreClientOptions o = fastClient();
  o.requestTimeout = 300ms;
  HttpStoreClient client("127.0.0.1", dropper.port(), o);
  auto start = std::chrono::steady_clock::now();
  auto got = client.get("k", Deadline::after(300ms));
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout) << got.status();
  EXPECT_NE(got.status().message().find("key 'k' not set before the deadline"), std::string::npos) << got.status();
  EXPECT_NE(got.status().message().find("last error: "), std::string::npos) << got.status();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_GT(dropper.accepted(), 1);
  const int before = dropper.accepted();
  auto added = client.add("n", 1);  // may or may not have been applied: not repeated
  EXPECT_EQ(added.status().code(), StatusCode::kUnavailable) << added.status();
  EXPECT_EQ(dropper.accepted(), before + 1);
}

TEST(HttpStoreTest, StopReleasesLongPollsPromptly) {
  HttpStoreServerOptions so;
  so.maxLongPoll = 10s;
  HttpStoreServer server(so);
  ASSERT_TRUE(server.start().isOk());
  EXPECT_TRUE(server.running());
  HttpStoreClientOptions co = fastClient();
  co.longPoll = 10s;
  HttpStoreClient client("127.0.0.1", server.port(), co);
  Status seen;
  std::thread t([&] { seen = client.get("never", Deadline::after(800ms)).status(); });
  std::this_thread::sleep_for(100ms);
  auto start = std::chrono::steady_clock::now();
  server.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_FALSE(server.running());
  t.join();
  EXPECT_FALSE(seen.isOk());
  server.stop();  // idempotent
  EXPECT_EQ(server.start().code(), StatusCode::kFailedPrecondition);
}

TEST(HttpStoreTest, OptionsAndAddressesAreValidated) {
  HttpStoreServerOptions bad;
  bad.threads = 1;
  HttpStoreServer server(bad);
  EXPECT_EQ(server.start().code(), StatusCode::kInvalidArgument);
  auto c = HttpStoreClient::connect("http://127.0.0.1:8123/");
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ((*c)->address(), "127.0.0.1:8123");
  EXPECT_EQ(HttpStoreClient::connect("nohost").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpStoreClient::connect("h:0").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpStoreClient::connect("h:99x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::comm
