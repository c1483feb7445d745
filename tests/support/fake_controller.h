#pragma once
// FakeController: fakes ddp-controller's worker routes (docs/API.md, "Worker routes") for
// worker-side tests: an httplib::Server on 127.0.0.1 with an ephemeral port that speaks the
// wire format (bearer token, registration, assignment long poll with 204 / 409, heartbeats with
// commands and 410 fencing) and records what it was sent. Behaviour is set through the knobs;
// nothing else of the controller (jobs, store, launcher) is there.
// Header-only so that only the tests that include it compile cpp-httplib's server.
// Thread model: the server's threads run the handlers; knobs and observations are guarded by
// mu_ and may be used from any thread. The destructor wakes sleeping handlers, stops and joins.

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/control/controller_client.h"

namespace ddp::testing {

class FakeController {
 public:
  FakeController(std::string job, std::string token) : job_(std::move(job)), token_(std::move(token)) {
    using httplib::Request;
    using httplib::Response;
    const std::string jobRe = "/v1/jobs/([^/]+)";
    server_.Post(jobRe + "/workers", [this](const Request& q, Response& s) { onRegister(q, s); });
    server_.Get(jobRe + "/workers/([^/]+)/assignment", [this](const Request& q, Response& s) { onAssignment(q, s); });
    server_.Post(jobRe + "/generations/([0-9]+)/heartbeat", [this](const Request& q, Response& s) { onHeartbeat(q, s); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeController() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  FakeController(const FakeController&) = delete;
  FakeController& operator=(const FakeController&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // ---- knobs ----
  // The assignment, answered after `openPolls` polls answered 204.
  void setAssignment(runtime::Assignment a, int openPolls = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    assignment_ = std::move(a);
    openPolls_ = openPolls;
    generation_ = assignment_->generation;
  }
  void setJobFinished(std::string state) {
    std::lock_guard<std::mutex> lock(mu_);
    finishedState_ = std::move(state);
  }
  // The job's current generation: heartbeats naming another get 410.
  void setGeneration(int64_t g) {
    std::lock_guard<std::mutex> lock(mu_);
    generation_ = g;
  }
  // The command of every heartbeat answer from now on.
  void setCommand(runtime::Command c) {
    std::lock_guard<std::mutex> lock(mu_);
    command_ = c;
  }
  // How long a heartbeat handler sleeps before answering (a stalled controller).
  void setHeartbeatDelay(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeatDelay_ = d;
  }

  // ---- observations ----
  struct Heartbeat {
    int64_t generation = 0;
    runtime::Heartbeat report;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Heartbeat> heartbeats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return heartbeats_;
  }
  std::vector<std::string> registrationBodies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return registrations_;
  }
  std::vector<int64_t> assignmentWaits() const {  // wait_ms of every poll
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }
  int rejectedTokens() const {
    std::lock_guard<std::mutex> lock(mu_);
    return rejected_;
  }

 private:
  static void json(httplib::Response& s, int status, const std::string& body) {
    s.status = status;
    s.set_content(body, "application/json");
  }
  // 401 / 404 as the real controller answers them; true when the request may go on.
  bool admit(const httplib::Request& q, httplib::Response& s) {
    const std::string auth = q.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) != 0 || auth.substr(7) != token_) {
      std::lock_guard<std::mutex> lock(mu_);
      ++rejected_;
      json(s, 401, auth.empty() ? R"({"error": "missing bearer token"})" : R"({"error": "invalid token"})");
      return false;
    }
    if (q.matches[1] != job_) {
      json(s, 404, R"({"error": "job not found"})");
      return false;
    }
    return true;
  }
  void onRegister(const httplib::Request& q, httplib::Response& s) {
    if (!admit(q, s)) return;
    std::lock_guard<std::mutex> lock(mu_);
    registrations_.push_back(q.body);
    auto j = nlohmann::json::parse(q.body, nullptr, false);
    const std::string id = j.is_object() && j.contains("workerId") ? j["workerId"].get<std::string>() : "";
    json(s, 200, nlohmann::json{{"workerId", id}, {"generation", generation_}}.dump());
  }
  void onAssignment(const httplib::Request& q, httplib::Response& s) {
    if (!admit(q, s)) return;
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t waitMs = q.has_param("wait_ms") ? std::stoll(q.get_param_value("wait_ms")) : 0;
    waits_.push_back(waitMs);
    if (finishedState_) {
      json(s, 409, nlohmann::json{{"error", "job " + job_ + " is finished"}, {"state", *finishedState_}}.dump());
      return;
    }
    if (!assignment_ || openPolls_ > 0) {
      if (openPolls_ > 0) --openPolls_;
      // A short hold, as a long poll whose round stays open would (capped to keep tests fast).
      cv_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(waitMs, 20)), [this] { return closing_; });
      s.status = 204;
      return;
    }
    json(s, 200, runtime::encodeAssignment(*assignment_));
  }
  void onHeartbeat(const httplib::Request& q, httplib::Response& s) {
    if (!admit(q, s)) return;
    const int64_t g = std::stoll(q.matches[2]);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, heartbeatDelay_, [this] { return closing_; });
    if (g != generation_) {
      json(s, 410, nlohmann::json{{"error", "stale generation"}, {"generation", generation_}}.dump());
      return;
    }
    auto report = runtime::decodeHeartbeat(q.body, protocol::Reading::kStrict);
    if (!report.isOk()) {
      json(s, 400, nlohmann::json{{"error", report.status().message()}}.dump());
      return;
    }
    heartbeats_.push_back({g, *report, std::chrono::steady_clock::now()});
    json(s, 200, runtime::encodeHeartbeatAnswer({command_, generation_}));
  }

  const std::string job_;
  const std::string token_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool closing_ = false;
  std::optional<runtime::Assignment> assignment_;
  int openPolls_ = 0;
  std::optional<std::string> finishedState_;
  int64_t generation_ = 1;
  runtime::Command command_;
  std::chrono::milliseconds heartbeatDelay_{0};
  std::vector<Heartbeat> heartbeats_;
  std::vector<std::string> registrations_;
  std::vector<int64_t> waits_;
  int rejected_ = 0;
};

// A 127.0.0.1 port with nothing listening (bound to learn a free one, then closed): connecting
// to it is refused at once.
inline int closedLocalPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace ddp::testing
