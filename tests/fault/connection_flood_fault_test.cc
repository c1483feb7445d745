// An anonymous flood of half-sent requests against the controller's public listener (issue:
// 9,000 of them filled the shared 8,192-connection budget and the workers' heartbeats got 503,
// failing a healthy job). A job trains with real ddp-worker processes while this test holds more
// than 8,192 partial connections open on the public port (no per-address cap, so that the
// budget itself fills; a connection the server times out is opened again): the job must succeed
// with no restart, the health probes on the worker listener must keep answering, and the
// refusals must be counted (Note [Two listeners] in controller/service/listeners.cc).
// Faked: nothing; the flood comes from this process over loopback. Cleanup: the flood's sockets
// close with the test; FaultHarness stops the controller and kills its workers by PID.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <httplib.h>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;

constexpr int kFlood = 8300;  // past the public listener's 8,192-connection budget

// Holds `count` connections to 127.0.0.1:`port`, each with half a request head sent; every 200 ms
// a connection the server closed (a 408 after its request timeout, or a 503 refusal) is opened
// again, until stop().
class HalfSentFlood {
 public:
  HalfSentFlood(int port, int count) : port_(port), fds_(static_cast<size_t>(count), -1) {
    for (int& fd : fds_) fd = open();
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        for (int& fd : fds_) {
          char b;
          if (fd < 0 || ::recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) >= 0) {  // answered or closed
            if (fd >= 0) ::close(fd);
            fd = open();
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  ~HalfSentFlood() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  int open() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char head[] = "GET /v1/jobs HTTP/1.1\r\nHo";
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd, head, sizeof head - 1, MSG_NOSIGNAL) < 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

 private:
  const int port_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(ConnectionFloodFaultTest, AJobSucceedsWhileHalfSentRequestsFillThePublicListener) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_max < 2 * kFlood + 2000) {
    GTEST_SKIP() << "the descriptor limit (hard " << r.rlim_max << ") cannot hold both ends of the flood";
  }
  r.rlim_cur = r.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &r), 0);
  FaultHarness h("local", "127.0.0.1", std::chrono::seconds(5),
                 [](controller::ControllerConfig& c) { c.maxConnectionsPerClient = 0; });
  ASSERT_TRUE(h.ok()) << h.startError();
  HalfSentFlood flood(h.port(), kFlood);
  // The public budget fills (the server accepts the flood's backlog in batches): a user's
  // request is refused.
  httplib::Client user("127.0.0.1", h.port());
  user.set_read_timeout(5, 0);
  std::string last;
  ASSERT_TRUE(h.waitFor(30, [&] {
    auto r = user.Get("/healthz");
    last = r ? std::to_string(r->status) + " " + r->body : "no answer";
    return r && r->status == 503;
  })) << "the public listener never filled: last answer " << last;

  ASSERT_TRUE(h.submit(faultJobYaml("flood", h.dir() + "/ckpt", 20000, 3)).isOk());
  httplib::Client probe("127.0.0.1", h.workerPort());
  probe.set_read_timeout(5, 0);
  int probes = 0, answered = 0;
  const bool done = h.waitFor(120, [&] {
    if (probes < 40) {  // the kubelet's view, every 50 ms for the first 2 s of the job, then now and then
      ++probes;
      auto hz = probe.Get("/healthz");
      auto rz = probe.Get("/readyz");
      answered += hz && hz->status == 200 && rz && rz->status == 200;
    }
    return controller::isTerminal(h.record("flood").phase);
  });
  ASSERT_TRUE(done) << h.describeEvents("flood");
  EXPECT_EQ(std::string(controller::jobPhaseName(h.record("flood").phase)), "Succeeded") << h.describeEvents("flood");
  EXPECT_EQ(h.record("flood").restarts, 0) << h.describeEvents("flood");
  EXPECT_EQ(answered, probes) << "the probes on the worker listener answered throughout";
  flood.stop();

  httplib::Client after("127.0.0.1", h.port());
  auto metrics = after.Get("/metrics", {{"Authorization", "Bearer " + h.controller().token()}});
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200) << metrics->body;
  const std::string series = "ddp_http_connections_dropped_total{listener=\"public\",reason=\"capacity\"} ";
  const size_t at = metrics->body.find(series);
  ASSERT_NE(at, std::string::npos) << metrics->body.substr(0, 2000);
  EXPECT_GE(std::stod(metrics->body.substr(at + series.size())), 1.0) << "the refusals were counted";
}

}  // namespace
}  // namespace ddp
