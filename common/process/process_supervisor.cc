#include "common/process/process_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace ddp::runtime {
namespace {

constexpr Duration kDrainLimit = std::chrono::milliseconds(1000);

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

int pollMillis(Duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms < 0) return 0;
  return static_cast<int>(ms > 1000 ? 1000 : ms);
}

}  // namespace

struct ProcessSupervisor::Child {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr (read ends)
  bool running = false;
  WorkerExit exit;
};

std::string WorkerExit::describe() const {
  std::string s = "rank " + std::to_string(rank);
  if (signaled) {
    s += " killed by signal " + std::to_string(code) + " (" + ::strsignal(code) + ")";
    if (killedBySupervisor) s += " after the grace period";
  } else {
    s += " exited with status " + std::to_string(code);
  }
  return s;
}

bool SupervisorOutcome::allOk() const {
  if (stopRequested || timedOut || firstFailure) return false;
  for (const auto& e : exits) {
    if (!e.ok()) return false;
  }
  return true;
}

ProcessSupervisor::ProcessSupervisor(SupervisorOptions options, Sink sink)
    : options_(options), sink_(std::move(sink)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    wakeRead_ = p[0];
    wakeWrite_ = p[1];
  }
}

ProcessSupervisor::~ProcessSupervisor() {
  for (auto& c : children_) {
    if (c.running) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);  // SIGKILL cannot be ignored: this returns promptly
    }
    for (int& fd : c.fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  if (wakeRead_ >= 0) ::close(wakeRead_);
  if (wakeWrite_ >= 0) ::close(wakeWrite_);
}

std::vector<pid_t> ProcessSupervisor::pids() const {
  std::vector<pid_t> out;
  for (const auto& c : children_) out.push_back(c.pid);
  return out;
}

void ProcessSupervisor::requestStop(int signal) {
  if (wakeWrite_ < 0) return;
  unsigned char b = static_cast<unsigned char>(signal);
  ssize_t n = ::write(wakeWrite_, &b, 1);
  (void)n;
}

Status ProcessSupervisor::start(const std::vector<ProcessSpec>& workers) {
  if (!children_.empty()) return failedPrecondition("supervisor already started");
  if (workers.empty()) return invalidArgument("no workers to start");
  if (wakeRead_ < 0) return internalError("could not create the supervisor's wake pipe");
  router_.emplace(static_cast<int>(workers.size()), options_.tailLines);
  children_.resize(workers.size());
  const pid_t parent = ::getpid();
  for (size_t i = 0; i < workers.size(); ++i) {
    const ProcessSpec& spec = workers[i];
    Child& c = children_[i];
    c.rank = static_cast<int>(i);
    c.exit.rank = c.rank;
    // Everything the child needs is built before fork (no allocation after it).
    std::vector<std::string> argStore;
    argStore.push_back(spec.exe);
    argStore.insert(argStore.end(), spec.args.begin(), spec.args.end());
    std::vector<char*> argv;
    for (auto& a : argStore) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> envStore;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      bool overridden = false;
      for (const auto& x : spec.extraEnv) {
        auto eq = x.find('=');
        if (kv.compare(0, eq + 1, x, 0, eq + 1) == 0) overridden = true;
      }
      if (!overridden) envStore.push_back(std::move(kv));
    }
    envStore.insert(envStore.end(), spec.extraEnv.begin(), spec.extraEnv.end());
    std::vector<char*> envp;
    for (auto& e : envStore) envp.push_back(e.data());
    envp.push_back(nullptr);

    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return unavailable(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return unavailable(std::string("pipe: ") + std::strerror(errno));
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      int e = errno;
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      children_.resize(i);
      return unavailable(std::string("fork: ") + std::strerror(e));
    }
    if (pid == 0) {
      // Child: only async-signal-safe calls until exec. Own session (Note [Worker supervision]).
      ::setsid();
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGCHLD}) ::signal(s, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(argStore[0].c_str(), argv.data(), envp.data());
      const char msg[] = "ddpctl: exec of the worker binary failed\n";
      ssize_t n = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
      (void)n;
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    setNonBlocking(out[0]);
    setNonBlocking(err[0]);
    c.pid = pid;
    c.fds[0] = out[0];
    c.fds[1] = err[0];
    c.running = true;
  }
  return Status::ok();
}

void ProcessSupervisor::emit(RouteTarget target, const std::string& text) {
  if (sink_) sink_(RoutedLine{target, text});
}

void ProcessSupervisor::readChild(Child& c, int s) {
  int& fd = c.fds[s];
  if (fd < 0) return;
  const StreamKind kind = s == 0 ? StreamKind::kStdout : StreamKind::kStderr;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      for (auto& line : router_->feed(c.rank, kind, buf, static_cast<size_t>(n))) {
        emit(line.target, line.text);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: the stream is done.
    for (auto& line : router_->flush(c.rank, kind)) emit(line.target, line.text);
    ::close(fd);
    fd = -1;
    return;
  }
}

void ProcessSupervisor::drainChild(Child& c, Deadline deadline) {
  while ((c.fds[0] >= 0 || c.fds[1] >= 0) && !deadline.expired()) {
    pollfd p[2];
    int n = 0;
    int which[2];
    for (int s = 0; s < 2; ++s) {
      if (c.fds[s] >= 0) {
        p[n] = {c.fds[s], POLLIN, 0};
        which[n++] = s;
      }
    }
    int r = ::poll(p, static_cast<nfds_t>(n), pollMillis(deadline.remaining()));
    if (r <= 0) continue;
    for (int k = 0; k < n; ++k) {
      if (p[k].revents != 0) readChild(c, which[k]);
    }
  }
}

void ProcessSupervisor::signalAll(int sig) {
  if (sig == SIGKILL) killSent_ = true;
  for (auto& c : children_) {
    if (c.running) ::kill(c.pid, sig);
  }
}

void ProcessSupervisor::beginStop(int sig) {
  if (stopping_) return;
  stopping_ = true;
  killAt_ = SystemClock::instance().now() + options_.grace;
  signalAll(sig);
}

void ProcessSupervisor::reportFailure(const WorkerExit& e) {
  emit(RouteTarget::kStderr, "ddpctl: worker " + e.describe() + "; stopping the other workers");
  if (const std::string& err = router_->lastError(e.rank); !err.empty()) {
    emit(RouteTarget::kStderr, "ddpctl: rank " + std::to_string(e.rank) + "'s last error: " + err);
  }
  const auto& tail = router_->tail(e.rank);
  if (tail.empty()) {
    emit(RouteTarget::kStderr, "ddpctl: rank " + std::to_string(e.rank) + " printed nothing");
    return;
  }
  emit(RouteTarget::kStderr, "ddpctl: last " + std::to_string(tail.size()) + " lines of rank " +
                                 std::to_string(e.rank) + ":");
  for (const auto& line : tail) emit(RouteTarget::kStderr, "  | " + line);
}

Result<SupervisorOutcome> ProcessSupervisor::run(Deadline deadline) {
  if (children_.empty()) return failedPrecondition("run() before start()");
  SupervisorOutcome outcome;
  const Clock& clock = SystemClock::instance();
  for (;;) {
    bool anyRunning = false;
    for (const auto& c : children_) anyRunning = anyRunning || c.running;
    if (!anyRunning) break;

    std::vector<pollfd> pfds;
    std::vector<std::pair<size_t, int>> owners;
    pfds.push_back({wakeRead_, POLLIN, 0});
    owners.push_back({SIZE_MAX, 0});
    for (size_t i = 0; i < children_.size(); ++i) {
      for (int s = 0; s < 2; ++s) {
        if (children_[i].fds[s] >= 0) {
          pfds.push_back({children_[i].fds[s], POLLIN, 0});
          owners.push_back({i, s});
        }
      }
    }
    ::poll(pfds.data(), pfds.size(), pollMillis(options_.pollInterval));
    for (size_t k = 1; k < pfds.size(); ++k) {
      if (pfds[k].revents != 0) readChild(children_[owners[k].first], owners[k].second);
    }
    if (pfds[0].revents != 0) {
      unsigned char sigs[64];
      ssize_t n = ::read(wakeRead_, sigs, sizeof(sigs));
      for (ssize_t k = 0; k < n; ++k) {
        if (!outcome.stopRequested) {
          outcome.stopRequested = true;
          outcome.stopSignal = sigs[k];
          if (!stopping_) {
            emit(RouteTarget::kStderr, std::string("ddpctl: ") + ::strsignal(sigs[k]) +
                                           ": asking every worker to checkpoint and stop (again to kill)");
            beginStop(SIGTERM);
          }
        } else {
          emit(RouteTarget::kStderr, "ddpctl: second stop request: killing every worker");
          signalAll(SIGKILL);
        }
      }
    }
    // Reap.
    for (auto& c : children_) {
      if (!c.running) continue;
      int status = 0;
      pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r != c.pid) continue;
      c.running = false;
      c.exit.signaled = WIFSIGNALED(status);
      c.exit.code = c.exit.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
      if (c.exit.signaled && c.exit.code == SIGKILL && killSent_) {
        c.exit.killedBySupervisor = true;
      }
      drainChild(c, Deadline::after(kDrainLimit));
      if (!c.exit.ok() && !outcome.firstFailure && !stopping_) {
        outcome.firstFailure = c.exit;
        reportFailure(c.exit);
        beginStop(SIGTERM);
      }
    }
    if (!stopping_ && deadline.expired()) {
      outcome.timedOut = true;
      emit(RouteTarget::kStderr, "ddpctl: the job's time limit passed; stopping every worker");
      beginStop(SIGTERM);
    }
    if (stopping_ && clock.now() >= killAt_) {
      bool any = false;
      for (const auto& c : children_) any = any || c.running;
      if (any) {
        emit(RouteTarget::kStderr, "ddpctl: grace period of " + formatDuration(options_.grace) +
                                       " passed; killing the remaining workers");
        signalAll(SIGKILL);
        killAt_ = TimePoint::max();
      }
    }
  }
  for (auto& c : children_) {
    drainChild(c, Deadline::after(kDrainLimit));
    outcome.exits.push_back(c.exit);
  }
  return outcome;
}

}  // namespace ddp::runtime
