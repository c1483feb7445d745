#include "worker/control/pod_supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "common/launch/worker_env.h"
#include "common/log.h"

namespace ddp::runtime {
namespace {

bool hasName(const std::string& entry, const char* name) {
  const size_t n = std::strlen(name);
  return entry.size() > n && entry.compare(0, n, name) == 0 && entry[n] == '=';
}

// fork + exec of one rank; the child dies with the supervisor. Returns the pid, or -1.
pid_t startRank(const PodSupervisorOptions& o, int localRank, const sigset_t& unblock) {
  std::vector<std::string> env = rankEnvironment(o.environment, o.workerIds, localRank);
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.args;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe calls until exec.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the supervisor died before prctl
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  ::execve(o.program.c_str(), argv.data(), envp.data());
  ::_exit(127);
}

class Supervisor {
 public:
  explicit Supervisor(const PodSupervisorOptions& o) : o_(o) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGCHLD);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    ::sigprocmask(SIG_BLOCK, &signals_, nullptr);
  }

  int run() {
    for (int l = 0; l < static_cast<int>(o_.workerIds.size()); ++l) {
      const pid_t pid = startRank(o_, l, signals_);
      if (pid < 0) {
        DDP_LOG(Error) << "pod supervisor: could not start rank " << o_.workerIds[l] << ": " << std::strerror(errno);
        fail(1);
        break;
      }
      DDP_LOG(Info) << "pod supervisor: started " << o_.workerIds[l] << " (local rank " << l << ", pid " << pid << ")";
      live_[pid] = l;
    }
    while (!live_.empty()) waitOnce();
    return failure_.value_or(0);
  }

 private:
  // One signal or a grace's end, then every rank that ended is reaped.
  void waitOnce() {
    const Duration slice = std::chrono::milliseconds(200);
    timespec ts{0, static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(slice).count())};
    const int sig = ::sigtimedwait(&signals_, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      DDP_LOG(Info) << "pod supervisor: signal " << sig << ": stopping the ranks (SIGKILL after "
                    << formatDuration(o_.stopGrace) << ")";
      stopAll(o_.stopGrace);
    }
    reap();
    if (killAt_ && SteadyClock::now() >= *killAt_) {
      for (const auto& [pid, l] : live_) ::kill(pid, SIGKILL);
      killAt_.reset();
    }
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      auto it = live_.find(pid);
      if (it == live_.end()) continue;
      const int code = rankExitCode(status);
      const std::string& id = o_.workerIds[it->second];
      live_.erase(it);
      if (code == 0) {
        DDP_LOG(Info) << "pod supervisor: " << id << " (pid " << pid << ") exited 0";
        continue;
      }
      DDP_LOG(Error) << "pod supervisor: " << id << " (pid " << pid << ") ended with " << code
                     << (failure_ ? "" : "; killing its siblings (the pod is replaced as one)");
      fail(code);
    }
  }

  // The first failure decides the exit status and ends the siblings (Note [Several ranks per
  // pod]: SIGKILL, not a stop request).
  void fail(int code) {
    if (failure_) return;
    failure_ = code == 0 ? 1 : code;
    for (const auto& [pid, l] : live_) ::kill(pid, SIGKILL);
  }

  // SIGTERM to every rank, SIGKILL to those left after `grace`.
  void stopAll(Duration grace) {
    for (const auto& [pid, l] : live_) ::kill(pid, SIGTERM);
    const TimePoint at = SteadyClock::now() + grace;
    if (!killAt_ || at < *killAt_) killAt_ = at;
  }

  using SteadyClock = std::chrono::steady_clock;
  const PodSupervisorOptions& o_;
  sigset_t signals_;
  std::map<pid_t, int> live_;  // pid -> local rank
  std::optional<int> failure_;
  std::optional<TimePoint> killAt_;
};

}  // namespace

std::vector<std::string> rankEnvironment(const std::vector<std::string>& base, const std::vector<std::string>& ids,
                                         int localRank) {
  std::vector<std::string> out;
  for (const std::string& e : base) {
    if (hasName(e, launch::kEnvPodWorkerIds) || hasName(e, launch::kEnvWorkerId) || hasName(e, launch::kEnvLocalRank)) {
      continue;
    }
    out.push_back(e);
  }
  out.push_back(std::string(launch::kEnvWorkerId) + "=" + ids.at(static_cast<size_t>(localRank)));
  out.push_back(std::string(launch::kEnvLocalRank) + "=" + std::to_string(localRank));
  return out;
}

int rankExitCode(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 1;
}

int superviseRanks(const PodSupervisorOptions& options) { return Supervisor(options).run(); }

}  // namespace ddp::runtime
