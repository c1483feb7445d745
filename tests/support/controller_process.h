#pragma once
// ControllerProcess: a ddp-controller process started by a test (fork + exec of the built
// binary), with its address read from its "listening on" line. The destructor SIGKILLs and
// reaps it; workers its local launcher started outlive it (killLauncherWorkers cleans them).
// Thread model: the test's thread only.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace ddp::test {

class ControllerProcess {
 public:
  // `env`: NAME=VALUE entries added to the controller's environment (its workers inherit them).
  explicit ControllerProcess(std::string stateDir, std::vector<std::string> env = {})
      : stateDir_(std::move(stateDir)), env_(std::move(env)) {}
  ~ControllerProcess() { kill(SIGKILL); }

  // Starts ddp-controller and waits for its "listening on" line.
  std::string start(const std::string& listen = "127.0.0.1:0") {
    int out[2];
    if (::pipe(out) != 0) return "";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      for (const auto& e : env_) ::putenv(const_cast<char*>(e.c_str()));
      const std::string bin = std::string(DDP_TEST_BIN_DIR) + "/ddp-controller";
      const std::string state = "--state-dir=" + stateDir_;
      ::execl(bin.c_str(), bin.c_str(), "--listen", listen.c_str(), state.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char c;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;  // bounded: a controller that prints nothing is given up on
      if (::read(out[0], &c, 1) != 1 || c == '\n') break;
      line.push_back(c);
    }
    ::close(out[0]);
    const std::string prefix = "listening on ";
    if (line.rfind(prefix, 0) != 0) {
      kill(SIGKILL);  // it failed to start (or took too long): reap it
      return "";
    }
    return line.substr(prefix.size());
  }
  // Starts on the address of `url`, which a killed controller just left (its port may take a
  // moment to be free again: retried for up to 5 s). Returns the new URL ("" if it never started).
  std::string restartOn(const std::string& url) {
    std::string again;
    for (int i = 0; i < 50 && again.empty(); ++i) {
      again = start("127.0.0.1:" + url.substr(url.rfind(':') + 1));
      if (again.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return again;
  }
  pid_t pid() const { return pid_; }
  // Sends `sig` and reaps the process.
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string stateDir_;
  std::vector<std::string> env_;
  pid_t pid_ = -1;
};

}  // namespace ddp::test
