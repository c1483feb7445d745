#include "tools/ddpctl/run_command.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/job_spec.h"
#include "common/store/http_store_server.h"
#include "worker/data/fashion_mnist.h"
#include "worker/runtime/job_spec_adapter.h"
#include "worker/runtime/launch_env.h"
#include "common/process/process_supervisor.h"
#include "worker/runtime/worker_config.h"

namespace ddp::ddpctl {
namespace {

using runtime::ProcessSupervisor;
using runtime::RoutedLine;
using runtime::RouteTarget;

ProcessSupervisor* g_supervisor = nullptr;  // for the signal handler (requestStop is async-signal-safe)

void onStopSignal(int sig) {
  if (g_supervisor != nullptr) g_supervisor->requestStop(sig);
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

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

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

int runCommand(const std::vector<std::string>& argv) {
  RunArgs a;
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

  // Validate everything the workers would refuse, before starting any of them.
  std::vector<SpecError> errors;
  auto spec = loadJobSpecFile(a.jobFile, &errors);
  if (!spec.isOk()) {
    say(spec.status().message());
    return kExitUsage;
  }
  auto config = runtime::trainerConfigFromJobSpec(*spec);
  if (!config.isOk()) {
    say(a.jobFile + ": " + config.status().message());
    return kExitUsage;
  }
  if (config->data == runtime::DataSource::kFashionMnist && !data::fashionMnistAvailable(spec->data.dir)) {
    say(a.jobFile + ": spec.data.dir: the Fashion-MNIST files are not in " + spec->data.dir +
        "; install the Debian package " + data::kFashionMnistPackage + " (apt-get install " +
        data::kFashionMnistPackage + ") or point spec.data.dir at the IDX files");
    return kExitUsage;
  }
  const int workers = a.workers > 0 ? a.workers : spec->workers.count;
  const std::string logFormat = !a.logFormat.empty() ? a.logFormat
                                : spec->logFormat == JobLogFormat::kJson ? "json" : "human";
  const std::string workerBin = a.workerBin.empty() ? selfDir() + "/ddp-worker" : a.workerBin;
  if (::access(workerBin.c_str(), X_OK) != 0) {
    say("cannot run the worker program " + workerBin + ": " + std::strerror(errno) +
        " (build it: ninja ddp-worker, or pass --worker-bin)");
    return kExitUsage;
  }

  comm::HttpStoreServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  comm::HttpStoreServer server(so);
  if (Status st = server.start(); !st.isOk()) {
    say("could not start the store: " + st.toString());
    return kExitFailed;
  }

  // Note [Comm thread priority]: real-time comm threads are safe while compute threads do not
  // outnumber the cores; beyond that ask the workers for normal priority (unless the job or
  // the environment chose).
  const int cores = runtime::usableCores();
  const std::optional<std::string> commPriorityEnv = runtime::commPriorityEnvFor(*spec, workers, cores);
  if (commPriorityEnv) {
    say(std::to_string(workers) + " workers x " + std::to_string(spec->threadsPerWorker) + " compute thread(s) on " +
        std::to_string(cores) + " core(s): communication threads at normal priority (commThreadPriority: auto)");
  }

  const std::string jobPath = absolutePath(a.jobFile);
  std::vector<runtime::ProcessSpec> specs;
  for (int r = 0; r < workers; ++r) {
    runtime::ProcessSpec p;
    p.exe = workerBin;
    p.extraEnv = {"DDP_STORE_ADDR=" + server.address(), "DDP_JOB_FILE=" + jobPath,
                  "DDP_RANK=" + std::to_string(r), "DDP_WORLD_SIZE=" + std::to_string(workers),
                  "DDP_GENERATION=0", "DDP_LOG_FORMAT=" + logFormat};
    if (!a.checkpointDir.empty()) p.extraEnv.push_back("DDP_CHECKPOINT_DIR=" + a.checkpointDir);
    if (commPriorityEnv) p.extraEnv.push_back(*commPriorityEnv);
    specs.push_back(std::move(p));
  }

  runtime::SupervisorOptions opts;
  opts.grace = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(a.graceSeconds));
  ProcessSupervisor supervisor(opts, [](const RoutedLine& l) {
    writeLine(l.target == RouteTarget::kStdout ? STDOUT_FILENO : STDERR_FILENO, l.text);
  });
  ::signal(SIGPIPE, SIG_IGN);
  g_supervisor = &supervisor;
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const auto start = std::chrono::steady_clock::now();
  say("job " + spec->name + ": starting " + std::to_string(workers) + " workers (store " + server.address() + ")");
  if (Status st = supervisor.start(specs); !st.isOk()) {
    g_supervisor = nullptr;
    say("could not start the workers: " + st.toString());
    return kExitFailed;
  }
  const Deadline deadline = a.timeLimitSeconds > 0
                                ? Deadline::after(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(a.timeLimitSeconds)))
                                : Deadline(TimePoint::max());
  auto outcome = supervisor.run(deadline);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  g_supervisor = nullptr;
  server.stop();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char took[32];
  std::snprintf(took, sizeof(took), "%.1f s", secs);
  if (!outcome.isOk()) {
    say("supervision failed: " + outcome.status().toString());
    return kExitFailed;
  }
  if (outcome->firstFailure) {
    say("job " + spec->name + " failed after " + took + ": " + outcome->firstFailure->describe());
    return kExitFailed;
  }
  if (outcome->timedOut) {
    say("job " + spec->name + " stopped at its time limit after " + took);
    return kExitTimeLimit;
  }
  if (outcome->stopRequested) {
    bool clean = true;
    for (const auto& e : outcome->exits) clean = clean && e.ok();
    say("job " + spec->name + " stopped on request after " + took +
        (clean ? "; run the same command again to resume from its checkpoint" : "; some workers had to be killed"));
    return 128 + outcome->stopSignal;
  }
  say("job " + spec->name + " finished in " + took);
  return kExitOk;
}

}  // namespace ddp::ddpctl
