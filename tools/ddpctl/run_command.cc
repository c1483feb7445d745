#include "tools/ddpctl/run_command.h"

#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/jobspec/job_spec.h"
#include "common/log.h"
#include "common/usable_cores.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "worker/data/fashion_mnist.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/control/launch_env.h"
#include "common/process/output_router.h"
#include "worker/control/worker_config.h"

namespace ddp::ddpctl {
namespace {

using runtime::OutputRouter;
using runtime::RoutedLine;
using runtime::RouteTarget;
using runtime::StreamKind;

// Set by the signal handler (async-signal-safe: two atomics), read by the supervision loop.
std::atomic<int> g_stopRequests{0};
std::atomic<int> g_stopSignal{0};

void onStopSignal(int sig) {
  int expected = 0;
  g_stopSignal.compare_exchange_strong(expected, sig);
  g_stopRequests.fetch_add(1);
}

void removeTree(const std::string& dir) {
  ::nftw(dir.c_str(), [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
         FTW_DEPTH | FTW_PHYS);
}

void writeLine(int fd, const std::string& text) {
  std::string l = text + "\n";
  size_t off = 0;
  while (off < l.size()) {
    ssize_t n = ::write(fd, l.data() + off, l.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void say(const std::string& text) { writeLine(STDERR_FILENO, "ddpctl: " + text); }


std::string absolutePath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return buf;
  return p;
}

bool parseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0)) return false;
  *out = v;
  return true;
}

struct RunArgs {
  std::string jobFile;
  int workers = 0;  // 0: the job's spec.workers.count
  std::string logFormat;  // empty: the job's spec.logFormat
  std::string checkpointDir;
  double timeLimitSeconds = 0;  // 0: none
  double graceSeconds = 30;
  std::string workerBin;
};


void installStopHandlers() {
  g_stopRequests = 0;
  g_stopSignal = 0;
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// Reads the merged worker log ("[wN] " tagged lines) and routes each line to stdout or stderr
// (Note [Merged worker output]); without a log, it only waits.
struct LogPump {
  controller::LogStream* log;
  OutputRouter& router;
  int workers;
  std::string partial;

  void operator()(Duration wait) {
    if (log == nullptr) {
      std::this_thread::sleep_for(wait);
      return;
    }
    auto chunk = log->read(Deadline::after(wait));
    if (!chunk.isOk()) return;
    partial += *chunk;
    size_t startAt = 0;
    for (size_t nl; (nl = partial.find('\n', startAt)) != std::string::npos; startAt = nl + 1) {
      route(partial.substr(startAt, nl - startAt));
    }
    partial.erase(0, startAt);
  }

  void route(std::string line) {
    int rank = 0;
    if (line.rfind("[w", 0) == 0) {
      auto close = line.find("] ");
      if (close != std::string::npos) {
        rank = std::atoi(line.c_str() + 2);
        line = line.substr(close + 2);
      }
    }
    if (rank < 0 || rank >= workers) rank = 0;
    const StreamKind kind = OutputRouter::logLevelOf(line) != 0 ? StreamKind::kStderr : StreamKind::kStdout;
    line.push_back('\n');
    for (const auto& l : router.feed(rank, kind, line.data(), line.size())) {
      if (l.target != RouteTarget::kDrop) writeLine(l.target == RouteTarget::kStdout ? STDOUT_FILENO : STDERR_FILENO, l.text);
    }
  }
};

// A failed job: its first error line, each failed rank's last error and last lines.
int reportFailure(const controller::JobRecord& rec, OutputRouter& router, int workers, const std::string& took) {
  const controller::JobCondition* failed = rec.findCondition(controller::kConditionFailed);
  std::string why = failed != nullptr ? failed->message : std::string(controller::jobPhaseName(rec.phase));
  const std::string firstLine = why.substr(0, why.find('\n'));
  say(firstLine + "; stopping the other workers");
  for (const auto& w : rec.workers) {
    if (w.state != "Failed" || w.rank < 0 || w.rank >= workers) continue;
    const std::string r = std::to_string(w.rank);
    if (!router.lastError(w.rank).empty()) say("rank " + r + "'s last error: " + router.lastError(w.rank));
    const auto& tail = router.tail(w.rank);
    if (tail.empty()) {
      say("rank " + r + " printed nothing");
    } else {
      say("last " + std::to_string(tail.size()) + " lines of rank " + r + ":");
      for (const auto& l : tail) writeLine(STDERR_FILENO, "  | " + l);
    }
  }
  say("job " + rec.name + " failed after " + took + ": " + firstLine);
  return kExitFailed;
}

// Note [ddpctl run]: the job runs through an in-process controller with the local launcher
// (the service's code path). This loop is the console: it follows every worker's log (merged,
// each line tagged "[wN] "; ranks are the launcher slots for a fresh job), routes the lines
// like the old supervisor did (Note [Merged worker output]: a log line counts as stderr,
// anything else as stdout), turns Ctrl-C / SIGTERM into a cancel (the workers checkpoint and
// stop) and a second one into SIGKILL, enforces --time-limit the same way, and when the job
// ends prints how, naming a failed rank with its last error and last lines.
int superviseJob(controller::Controller& ctl, const JobSpec& spec, int workers, const RunArgs& a) {
  const std::string name = spec.name;
  OutputRouter router(workers, 20);
  installStopHandlers();

  const auto start = std::chrono::steady_clock::now();
  say("job " + name + ": starting " + std::to_string(workers) + " workers (controller " + ctl.url() + ")");
  auto submitted = ctl.jobs().submit(spec);
  if (!submitted.isOk()) {
    say("could not start the job: " + submitted.status().message());
    return submitted.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  controller::LogOptions lo;
  lo.follow = true;
  auto log = ctl.launcher().openLog(name, "", lo);
  LogPump pump{log.isOk() ? (*log).get() : nullptr, router, workers, {}};
  const bool limited = a.timeLimitSeconds > 0;
  const Deadline limit = Deadline::after(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(limited ? a.timeLimitSeconds : 1)));
  bool timedOut = false, cancelled = false, killed = false;
  controller::JobRecord rec = *submitted;
  while (true) {
    pump(std::chrono::milliseconds(100));
    const int requests = g_stopRequests.load();
    if ((requests > 0 || (limited && limit.expired())) && !cancelled) {
      cancelled = true;
      timedOut = requests == 0;
      if (timedOut) {
        say("the job's time limit passed; every worker checkpoints and stops");
      } else {
        say(std::string(::strsignal(g_stopSignal.load())) + ": every worker checkpoints and stops (again to kill them)");
      }
      (void)ctl.jobs().cancel(name);
    }
    if (requests > 1 && !killed) {
      killed = true;
      say("second stop request: killing every worker");
      (void)ctl.launcher().stopJob(name, Duration::zero());
    }
    auto now = ctl.jobs().get(name);
    if (now.isOk()) rec = *now;
    if (controller::isTerminal(rec.phase)) break;
  }
  // What the workers printed last.
  for (int i = 0; i < 5; ++i) pump(std::chrono::milliseconds(60));
  const Deadline drain = Deadline::after(std::chrono::seconds(static_cast<int64_t>(a.graceSeconds) + 5));
  while (!ctl.launcher().livePids(name).empty() && !drain.expired()) pump(std::chrono::milliseconds(50));
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char took[32];
  std::snprintf(took, sizeof(took), "%.1f s", secs);
  if (rec.phase == controller::JobPhase::kSucceeded) {
    say("job " + name + " finished in " + took);
    return kExitOk;
  }
  if (rec.phase == controller::JobPhase::kCancelled) {
    say("job " + name + (timedOut ? " stopped at its time limit after " : " stopped on request after ") + took +
        (killed ? "; some workers had to be killed" : "; run the same command again to resume from its checkpoint"));
    return timedOut ? kExitTimeLimit : 128 + g_stopSignal.load();
  }
  return reportFailure(rec, router, workers, took);
}

}  // namespace

std::string runUsage() {
  return "usage: ddpctl run JOB.yaml [options]\n"
         "Runs the job on this machine: an in-process store and N ddp-worker processes.\n"
         "Shows rank 0's progress and every rank's warnings and errors. Ctrl-C (or SIGTERM)\n"
         "asks every worker to checkpoint at the next step and stop; a second Ctrl-C kills them.\n"
         "Running the same job again resumes from its latest complete checkpoint.\n"
         "\n"
         "options:\n"
         "  --workers N            number of workers (default: the job's spec.workers.count)\n"
         "  --log-format F         human | json (json: one JSON object per progress line)\n"
         "  --checkpoint-dir DIR   override spec.checkpoint.dir\n"
         "  --time-limit SECONDS   stop the job (checkpoint, then exit 124) after this long\n"
         "  --grace SECONDS        how long workers get to stop before SIGKILL (default 30)\n"
         "  --worker-bin PATH      the worker program (default: ddp-worker next to ddpctl)\n"
         "  -h, --help             this text\n"
         "\n"
         "exit status: 0 finished, 1 a worker failed, 2 bad arguments or invalid job,\n"
         "124 time limit, 128+N stopped by signal N (after the workers checkpointed).\n";
}

namespace {

// Reads the command line into `a`; an exit status to return at once, or -1 to go on.
int parseRunArgs(const std::vector<std::string>& argv, RunArgs& a) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= argv.size()) {
        say(std::string(flag) + ": missing value");
        return nullptr;
      }
      return &argv[++i];
    };
    if (s == "-h" || s == "--help") {
      std::fputs(runUsage().c_str(), stdout);
      return kExitOk;
    } else if (s == "--workers") {
      const std::string* v = value("--workers");
      if (v == nullptr) return kExitUsage;
      a.workers = std::atoi(v->c_str());
      if (a.workers <= 0 || a.workers > 256) {
        say("--workers: '" + *v + "' is not a worker count in [1, 256]");
        return kExitUsage;
      }
    } else if (s == "--log-format") {
      const std::string* v = value("--log-format");
      if (v == nullptr) return kExitUsage;
      runtime::LogFormat f;
      if (!runtime::parseLogFormat(*v, &f)) {
        say("--log-format: '" + *v + "' is not human or json");
        return kExitUsage;
      }
      a.logFormat = f == runtime::LogFormat::kJson ? "json" : "human";
    } else if (s == "--checkpoint-dir") {
      const std::string* v = value("--checkpoint-dir");
      if (v == nullptr) return kExitUsage;
      a.checkpointDir = absolutePath(*v);
    } else if (s == "--time-limit" || s == "--grace") {
      const std::string* v = value(s.c_str());
      if (v == nullptr) return kExitUsage;
      double secs = 0;
      if (!parseSeconds(*v, &secs)) {
        say(s + ": '" + *v + "' is not a positive number of seconds");
        return kExitUsage;
      }
      (s == "--grace" ? a.graceSeconds : a.timeLimitSeconds) = secs;
    } else if (s == "--worker-bin") {
      const std::string* v = value("--worker-bin");
      if (v == nullptr) return kExitUsage;
      a.workerBin = *v;
    } else if (!s.empty() && s[0] == '-') {
      say("run: unknown option '" + s + "'\n" + runUsage());
      return kExitUsage;
    } else if (a.jobFile.empty()) {
      a.jobFile = s;
    } else {
      say("run: only one job file, got '" + a.jobFile + "' and '" + s + "'");
      return kExitUsage;
    }
  }
  if (a.jobFile.empty()) {
    say("run: missing JOB.yaml\n" + runUsage());
    return kExitUsage;
  }
  return -1;
}

// Note [Allowed path roots]: the user's own files, named as the user would, from here.
void makePathsAbsolute(JobSpec& spec) {
  auto absolute = [](std::string* p) {
    if (!p->empty() && p->front() != '/') *p = std::filesystem::absolute(*p).lexically_normal().string();
  };
  for (std::string* p : {&spec.checkpoint.dir, &spec.init.from, &spec.data.train.features, &spec.data.train.targets,
                         &spec.data.val.features, &spec.data.val.targets}) {
    absolute(p);
  }
  if (spec.data.dataset == DatasetKind::kIdx || spec.data.dataset == DatasetKind::kCsv) {
    for (std::string* p : {&spec.data.train.path, &spec.data.val.path}) absolute(p);
  }
}

// The embedded controller of Note [ddpctl run]: loopback, the local launcher, workers tied to
// this process, any worker command and path of the user's.
controller::ControllerConfig embeddedConfig(const std::string& stateDir, const std::string& workerBin,
                                            const std::string& logFormat, const RunArgs& a,
                                            std::optional<CommThreadPriority> commPriority) {
  controller::ControllerConfig cc;
  cc.listenHost = "127.0.0.1";
  cc.listenPort = 0;
  cc.stateDir = stateDir;
  cc.workerBinary = workerBin;
  cc.tieWorkersToProcess = true;
  cc.stopGrace = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(a.graceSeconds));
  cc.workerLogFormat = logFormat;
  cc.workerCheckpointDir = a.checkpointDir;
  cc.allowAnyWorkerCommand = true;  // Note [Worker commands]: the user's own code, their machine
  cc.allowedPathRoots = {"/"};  // any directory of the user's, but the embedded state dir
  if (commPriority) cc.commThreadPriority = commThreadPriorityName(*commPriority);
  cc.persistEvery = std::chrono::seconds(5);
  return cc;
}

// Note [Comm thread priority]: real-time comm threads are safe while compute threads do not
// outnumber the cores; beyond that ask the workers for normal priority (unless the job or
// the environment chose).
Result<std::optional<CommThreadPriority>> commPriorityFor(const JobSpec& spec, int workers) {
  const int cores = usableCores();
  DDP_ASSIGN_OR_RETURN(const auto operatorPriority, runtime::operatorCommPriority(runtime::processEnv()));
  const std::optional<CommThreadPriority> commPriority = runtime::workerCommPriority(spec, workers, cores, operatorPriority);
  if (commPriority && !operatorPriority) {
    say(std::to_string(workers) + " workers x " + std::to_string(spec.threadsPerWorker) + " compute thread(s) on " +
        std::to_string(cores) + " core(s): communication threads at normal priority (commThreadPriority: auto)");
  }
  return commPriority;
}

}  // namespace

int runCommand(const std::vector<std::string>& argv) {
  RunArgs a;
  if (const int code = parseRunArgs(argv, a); code >= 0) return code;

  // Validate everything the workers would refuse, before starting any of them.
  std::vector<SpecError> errors;
  auto spec = loadJobSpecFile(a.jobFile, &errors);
  if (!spec.isOk()) {
    say(spec.status().message());
    return kExitUsage;
  }
  makePathsAbsolute(*spec);
  auto config = runtime::trainerConfigFromJobSpec(*spec);
  if (!config.isOk()) {
    say(a.jobFile + ": " + config.status().message());
    return kExitUsage;
  }
  if (config->data == DatasetKind::kFashionMnist && !data::fashionMnistAvailable(spec->data.dir)) {
    say(a.jobFile + ": spec.data.dir: the Fashion-MNIST files are not in " + spec->data.dir +
        "; install the Debian package " + data::kFashionMnistPackage + " (apt-get install " +
        data::kFashionMnistPackage + ") or point spec.data.dir at the IDX files");
    return kExitUsage;
  }
  const int workers = a.workers > 0 ? a.workers : spec->workers.count;
  const std::string logFormat = !a.logFormat.empty() ? a.logFormat
                                : spec->logFormat == JobLogFormat::kJson ? "json" : "human";
  const std::string workerBin = a.workerBin.empty() ? controller::programDir() + "/ddp-worker" : a.workerBin;
  if (::access(workerBin.c_str(), X_OK) != 0) {
    say("cannot run the worker program " + workerBin + ": " + std::strerror(errno) +
        " (build it: ninja ddp-worker, or pass --worker-bin)");
    return kExitUsage;
  }

  const Result<std::optional<CommThreadPriority>> commPriority = commPriorityFor(*spec, workers);
  if (!commPriority.isOk()) {
    say(commPriority.status().message());
    return kExitUsage;
  }
  spec->workers.count = spec->workers.min = spec->workers.max = workers;

  // The same code path as the service: an in-process controller with the local launcher, whose
  // workers die with this process (Note [ddpctl run]).
  char stateTemplate[] = "/tmp/ddpctl-run-XXXXXX";
  if (::mkdtemp(stateTemplate) == nullptr) {
    say(std::string("cannot create a state directory under /tmp: ") + std::strerror(errno));
    return kExitFailed;
  }
  const std::string stateDir = stateTemplate;
  const controller::ControllerConfig cc = embeddedConfig(stateDir, workerBin, logFormat, a, *commPriority);
  int code = kExitFailed;
  {
    // The console is this command's own lines and the workers'; the embedded controller's
    // info lines (phase changes) would only repeat them.
    log::setLevel(log::Level::kWarning);
    auto ctl = controller::Controller::start(cc);
    if (!ctl.isOk()) {
      say("could not start the embedded controller: " + ctl.status().toString());
      removeTree(stateDir);
      return kExitFailed;
    }
    code = superviseJob(**ctl, *spec, workers, a);
    (*ctl)->stop();
  }
  removeTree(stateDir);
  return code;
}

}  // namespace ddp::ddpctl
