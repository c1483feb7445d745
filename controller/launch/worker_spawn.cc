#include "controller/launch/worker_spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/process/pidfd.h"

extern char** environ;

namespace ddp::controller {
namespace {

Status sysError(const std::string& what, int err) { return unavailable(what + ": " + std::strerror(err)); }

// The child's side of Note [Worker process setup]; never returns.
[[noreturn]] void execChild(const SpawnSpec& spec, char* const* argv, char* const* envp, int devNull,
                            int logFd, int errWrite, pid_t parent) {
  ::setsid();
  if (spec.tieToParent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  }
  // Lift the three descriptors above 2 first so the dup2s below cannot clobber one another.
  const int in = ::fcntl(devNull, F_DUPFD_CLOEXEC, 3);
  const int out = ::fcntl(logFd, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) {
    const int e = errno;
    ssize_t n = ::write(errWrite, &e, sizeof(e));
    (void)n;
    ::_exit(127);
  }
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    struct rlimit rl;
    rlim_t max = 65536;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max) max = rl.rlim_cur;
    for (rlim_t fd = 3; fd < max; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  }
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(spec.exe.c_str(), argv, envp);
  const int e = errno;
  ssize_t n = ::write(errWrite, &e, sizeof(e));
  (void)n;
  ::_exit(127);
}

// Waits for the exec report: EOF (exec'd), an errno (exec failed) or the deadline.
int awaitExec(int errRead, Deadline deadline) {
  for (;;) {
    pollfd p{errRead, POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    const int r = ::poll(&p, 1, static_cast<int>(ms));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;  // deadline: assume it exec'd; an early exit is reported as an exit
    int childErrno = 0;
    const ssize_t n = ::read(errRead, &childErrno, sizeof(childErrno));
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(sizeof(childErrno)) ? childErrno : 0;
  }
}

}  // namespace

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

std::vector<std::string> mergeEnvironment(std::vector<std::string> base, const std::vector<std::string>& overrides) {
  for (const auto& kv : overrides) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    bool replaced = false;
    for (auto& existing : base) {
      if (existing.size() > eq && existing.compare(0, eq + 1, kv, 0, eq + 1) == 0) {
        existing = kv;
        replaced = true;
        break;
      }
    }
    if (!replaced) base.push_back(kv);
  }
  return base;
}

Result<SpawnedProcess> spawnWorker(const SpawnSpec& spec, Deadline execDeadline) {
  // Everything the child touches is built before fork (no allocation after it).
  std::vector<std::string> argStore;
  argStore.push_back(spec.exe);
  argStore.insert(argStore.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (auto& a : argStore) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStore = spec.env;
  std::vector<char*> envp;
  for (auto& e : envStore) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int logFd = ::open(spec.logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (logFd < 0) return sysError("open log " + spec.logPath, errno);
  const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) {
    const int e = errno;
    ::close(logFd);
    return sysError("open /dev/null", e);
  }
  int errPipe[2];
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(logFd);
    ::close(devNull);
    return sysError("pipe", e);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) execChild(spec, argv.data(), envp.data(), devNull, logFd, errPipe[1], parent);
  const int forkErrno = errno;
  ::close(errPipe[1]);
  ::close(logFd);
  ::close(devNull);
  if (pid < 0) {
    ::close(errPipe[0]);
    return sysError("fork", forkErrno);
  }
  // The child is not reaped before pidfd_open (nobody waits for it yet), so the pid is still its.
  const int pidfd = pidfdOpen(pid);
  const int pidfdErrno = errno;
  const int childErrno = awaitExec(errPipe[0], execDeadline);
  ::close(errPipe[0]);
  if (childErrno != 0 || pidfd < 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);  // it is exiting (or killed): returns promptly
    if (pidfd >= 0) ::close(pidfd);
    if (childErrno != 0) return sysError("exec " + spec.exe, childErrno);
    return sysError("pidfd_open", pidfdErrno);
  }
  SpawnedProcess p;
  p.id.pid = pid;
  p.pidfd = pidfd;
  auto st = readProcStat(pid);  // a zombie still has its stat, so this holds even if it exited
  p.id.startTime = st.isOk() ? st->startTime : 0;
  return p;
}

}  // namespace ddp::controller
