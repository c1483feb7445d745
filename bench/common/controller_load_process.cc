#include "bench/common/controller_load_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace ddp::bench {
namespace {

constexpr const char* kListeningPrefix = "listening on http://";
constexpr const char* kWorkersPrefix = "workers on http://";  // the worker listener (Note [Two listeners])

// The port of the line starting with `prefix` in `out` (0 when not there yet, -1 unparsable).
int portAfter(const std::string& out, const char* prefix, std::string* host) {
  const size_t at = out.find(prefix);
  const size_t eol = at == std::string::npos ? std::string::npos : out.find('\n', at);
  if (eol == std::string::npos) return 0;
  const std::string hostPort = out.substr(at + std::strlen(prefix), eol - at - std::strlen(prefix));
  const size_t colon = hostPort.rfind(':');
  if (colon == std::string::npos) return -1;
  *host = hostPort.substr(0, colon);
  const int port = std::atoi(hostPort.c_str() + colon + 1);
  return port > 0 ? port : -1;
}
constexpr auto kPollEvery = std::chrono::milliseconds(10);

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string describeWait(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

Result<std::unique_ptr<ControllerLoadProcess>> ControllerLoadProcess::start(const ControllerLoadOptions& options) {
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return notFound("controller binary " + options.binary + " is not executable: " + std::strerror(errno) +
                    " (build the ddp-controller target or pass --controller PATH)");
  }
  std::unique_ptr<ControllerLoadProcess> p(new ControllerLoadProcess(options));
  DDP_ASSIGN_OR_RETURN(p->tmpDir_, TempDir::make("bench_controller"));
  p->stateDir_ = p->tmpDir_.path() + "/state";
  if (::mkdir(p->stateDir_.c_str(), 0700) != 0) return unavailable("mkdir " + p->stateDir_ + ": " + std::strerror(errno));
  DDP_RETURN_IF_ERROR(p->spawn());
  const Deadline deadline = Deadline::after(options.startTimeout);
  Status st = p->awaitListening(deadline);
  if (!st.isOk()) {
    const std::string tail = p->logTail();
    return Status(st.code(), "ddp-controller did not start: " + st.message() +
                                 (tail.empty() ? " (nothing on its stderr)" : "; its stderr ends:\n" + tail));
  }
  // The token file is written before the server listens; still allow for a slow file system.
  const std::string tokenPath = p->stateDir_ + "/token";
  while (p->token_.empty() && !deadline.expired()) {
    std::string t = readFile(tokenPath);
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    p->token_ = t;
    if (p->token_.empty()) std::this_thread::sleep_for(kPollEvery);
  }
  if (p->token_.empty()) return timeoutError("no controller token in " + tokenPath);
  return p;
}

Status ControllerLoadProcess::spawn() {
  std::vector<std::string> args = {options_.binary, "--listen", "127.0.0.1:0", "--state-dir", stateDir_,
                                   "--launcher", "external"};
  args.insert(args.end(), options_.extraArgs.begin(), options_.extraArgs.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string outPath = tmpDir_.path() + "/controller.out";
  const std::string errPath = tmpDir_.path() + "/controller.err";
  const pid_t parent = ::getpid();
  // Only async-signal-safe calls between fork and exec (everything is prepared above).
  const pid_t pid = ::fork();
  if (pid < 0) return unavailable(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  return Status::ok();
}

bool ControllerLoadProcess::reapIfExited(int* status) {
  if (reaped_) {
    *status = exitStatus_;
    return true;
  }
  if (::waitpid(pid_, status, WNOHANG) == pid_) {
    reaped_ = true;
    exitStatus_ = *status;
    return true;
  }
  return false;
}

Status ControllerLoadProcess::awaitListening(Deadline deadline) {
  const std::string outPath = tmpDir_.path() + "/controller.out";
  for (;;) {
    const std::string out = readFile(outPath);
    std::string workerHost;
    port_ = portAfter(out, kListeningPrefix, &host_);
    workerPort_ = portAfter(out, kWorkersPrefix, &workerHost);
    if (port_ < 0 || workerPort_ < 0) return internalError("cannot parse the listen lines: " + out);
    if (port_ > 0 && workerPort_ > 0) return Status::ok();
    int status = 0;
    if (reapIfExited(&status)) return unavailable("ddp-controller " + describeWait(status) + " before listening");
    if (deadline.expired()) return timeoutError("no '" + std::string(kListeningPrefix) + "...' line on its stdout");
    std::this_thread::sleep_for(kPollEvery);
  }
}

Status ControllerLoadProcess::stop() {
  Status result = Status::ok();
  if (pid_ > 0 && !reaped_) {
    int status = 0;
    if (reapIfExited(&status)) {
      result = unavailable("ddp-controller had already " + describeWait(status));
    } else {
      ::kill(pid_, SIGTERM);
      const Deadline grace = Deadline::after(options_.stopGrace);
      while (!reapIfExited(&status) && !grace.expired()) std::this_thread::sleep_for(kPollEvery);
      if (!reaped_) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        reaped_ = true;
        result = timeoutError("ddp-controller ignored SIGTERM for the grace period and was killed");
      } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        result = unavailable("ddp-controller " + describeWait(status) + " after SIGTERM");
      }
    }
  }
  tmpDir_.remove();
  return result;
}

ControllerLoadProcess::~ControllerLoadProcess() { (void)stop(); }

Result<double> ControllerLoadProcess::cpuSeconds() const {
  const std::string stat = readFile("/proc/" + std::to_string(pid_) + "/stat");
  // Fields after the command (which may hold spaces) start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return unavailable("cannot read /proc/" + std::to_string(pid_) + "/stat");
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Field 3 (state) is the first after ')'; utime and stime are fields 14 and 15.
  for (int f = 3; f <= 15 && in >> field; ++f) {
    if (f == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (f == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string ControllerLoadProcess::logTail(size_t bytes) const {
  if (tmpDir_.path().empty()) return {};
  const std::string err = readFile(tmpDir_.path() + "/controller.err");
  return err.size() <= bytes ? err : err.substr(err.size() - bytes);
}

}  // namespace ddp::bench
