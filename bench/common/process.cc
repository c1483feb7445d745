#include "bench/common/process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace ddp::bench {

std::string selfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

Result<pid_t> spawnProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) return invalidArgument("spawnProcess: empty argv");
  std::vector<std::string> copy = argv;
  std::vector<char*> raw;
  for (auto& a : copy) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, copy[0].c_str(), nullptr, nullptr, raw.data(), environ);
  if (rc != 0) return unavailable("spawn " + copy[0] + ": " + std::strerror(rc));
  return pid;
}

std::vector<ProcessExit> waitAll(const std::vector<pid_t>& pids, Deadline deadline) {
  std::vector<ProcessExit> exits(pids.size());
  size_t remaining = pids.size();
  for (size_t i = 0; i < pids.size(); ++i) exits[i].pid = pids[i];
  while (remaining > 0) {
    for (auto& e : exits) {
      if (e.exited || e.signal != 0 || e.pid <= 0) continue;
      int status = 0;
      if (waitpid(e.pid, &status, WNOHANG) == e.pid) {
        if (WIFEXITED(status)) e.exited = true, e.code = WEXITSTATUS(status);
        else if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (deadline.expired()) {
      for (auto& e : exits) {
        if (e.exited || e.signal != 0 || e.pid <= 0) continue;
        kill(e.pid, SIGKILL);
        int status = 0;
        waitpid(e.pid, &status, 0);
        e.signal = SIGKILL;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exits;
}

double processCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace ddp::bench
