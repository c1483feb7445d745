#pragma once
// A real Prometheus server (Debian's `prometheus` binary) for tests: started on loopback on a
// free port with a scrape config for one target, queried through its HTTP API. The test
// starts it and stops it (SIGTERM, then SIGKILL, by the pid it started; reaped), and its data
// directory is removed with the temporary directory the caller owns.
// Thread model: the test's thread only.

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace ddp::test {

// A port the OS called free a moment ago (bound to 127.0.0.1:0 and released).
inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

struct PrometheusTarget {
  std::string address;          // "127.0.0.1:PORT"
  std::string tokenFile;        // bearer token for the scrape ("" = none)
  std::string scrapeJob = "ddp-controller";
};

class PrometheusServer {
 public:
  PrometheusServer() = default;
  ~PrometheusServer() { stop(); }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Writes DIR/prometheus.yml, starts the server (data in DIR/tsdb, output in DIR/prometheus.log)
  // and waits up to `seconds` for /-/ready. "" on success, else what went wrong.
  std::string start(const std::string& dir, const PrometheusTarget& target, double seconds = 30) {
    port_ = freeLoopbackPort();
    const std::string config = dir + "/prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                          << "scrape_configs:\n  - job_name: " << target.scrapeJob << "\n"
                          << "    scrape_interval: 1s\n    scrape_timeout: 1s\n"
                          << "    honor_labels: true\n"  // the metrics' own `job` label wins
                          << (target.tokenFile.empty() ? ""
                                                       : "    authorization:\n      credentials_file: " +
                                                             target.tokenFile + "\n")
                          << "    static_configs:\n      - targets: ['" << target.address << "']\n";
    log_ = dir + "/prometheus.log";
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    const std::string cfg = "--config.file=" + config;
    const std::string tsdb = "--storage.tsdb.path=" + dir + "/tsdb";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execlp("prometheus", "prometheus", cfg.c_str(), tsdb.c_str(), listen.c_str(), "--log.level=warn",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid_ < 0) return "fork failed";
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(1, 0);
    client_->set_read_timeout(5, 0);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "prometheus exited at start: " + logText();
      }
      auto r = client_->Get("/-/ready");
      if (r && r->status == 200) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "prometheus not ready after " + std::to_string(seconds) + " s: " + logText();
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }

  // GET /api/v1/query?query=... : the parsed answer ({"status": "success", "data": ...} or
  // {"status": "error", "error": ...}); a JSON string describing a transport failure otherwise.
  nlohmann::json query(const std::string& promql) {
    auto r = client_->Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r) return "no answer from prometheus";
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    return j.is_discarded() ? nlohmann::json(r->body) : j;
  }

  // Polls `promql` until it returns at least one series (or `seconds` pass); the last answer.
  nlohmann::json queryUntilPresent(const std::string& promql, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < until) {
      j = query(promql);
      if (j.is_object() && j.value("status", "") == "success" && !j["data"]["result"].empty()) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return j;
  }

  std::string logText() const {
    std::ifstream in(log_);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace ddp::test
