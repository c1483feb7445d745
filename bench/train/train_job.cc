// runTrainJob (train_job.h): Note [bench_train runs] in bench/bench_train.cc.
#include "bench/train/train_job.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "bench/common/temp_dir.h"
#include "common/process/output_router.h"
#include "common/usable_cores.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "worker/control/launch_env.h"

namespace ddp::bench {
namespace {

// One run's bound: past it the job is cancelled and its workers killed.
constexpr Duration kRunLimit = std::chrono::minutes(10);
// After the job ended: how long its workers get to exit and its log to be read.
constexpr Duration kDrainLimit = std::chrono::seconds(30);

double field(const std::string& line, const std::string& name) {
  auto pos = line.find("\"" + name + "\":");
  if (pos == std::string::npos) return 0;
  return std::strtod(line.c_str() + pos + name.size() + 3, nullptr);
}

// The job's merged log ("[wN] " before each line), line by line: keeps rank 0's summary line
// and copies what a person should see (warnings, errors, non-log lines such as a crash) to
// stderr; progress lines and info logs are dropped.
class WorkerLines {
 public:
  void feed(const std::string& chunk) {
    partial_ += chunk;
    size_t from = 0;
    for (size_t nl; (nl = partial_.find('\n', from)) != std::string::npos; from = nl + 1) {
      line(partial_.substr(from, nl - from));
    }
    partial_.erase(0, from);
  }
  const std::string& summary() const { return summary_; }

 private:
  void line(const std::string& tagged) {
    std::string text = tagged;
    if (text.rfind("[w", 0) == 0) {
      const auto close = text.find("] ");
      if (close != std::string::npos) text = text.substr(close + 2);
    }
    if (text.find("\"event\":\"summary\"") != std::string::npos) {
      summary_ = text;
      return;
    }
    const char level = runtime::OutputRouter::logLevelOf(text);
    const bool progress = level == 0 && !text.empty() && text[0] == '{';
    if (level == 'W' || level == 'E' || (level == 0 && !progress && !text.empty())) {
      std::fprintf(stderr, "%s\n", tagged.c_str());
    }
  }
  std::string partial_;
  std::string summary_;
};

// Runs `spec` to its end on `ctl`. Returns the summary line, empty when the job did not
// succeed or printed none (the reason is on stderr).
std::string runJob(controller::Controller& ctl, const JobSpec& spec) {
  auto submitted = ctl.jobs().submit(spec);
  if (!submitted.isOk()) {
    std::fprintf(stderr, "bench_train: could not start job %s: %s\n", spec.name.c_str(),
                 submitted.status().toString().c_str());
    return "";
  }
  controller::LogOptions follow;
  follow.follow = true;
  auto log = ctl.launcher().openLog(spec.name, "", follow);
  WorkerLines lines;
  auto pump = [&](Duration wait) {  // false once the log has ended
    if (!log.isOk()) {
      std::this_thread::sleep_for(wait);
      return true;
    }
    auto chunk = (*log)->read(Deadline::after(wait));
    if (!chunk.isOk()) return false;
    lines.feed(*chunk);
    return true;
  };
  const Deadline limit = Deadline::after(kRunLimit);
  bool killed = false;
  controller::JobRecord rec = *submitted;
  while (!controller::isTerminal(rec.phase)) {
    pump(std::chrono::milliseconds(100));
    if (limit.expired() && !killed) {
      killed = true;
      std::fprintf(stderr, "bench_train: job %s ran past %s: killing its workers\n", spec.name.c_str(),
                   formatDuration(kRunLimit).c_str());
      (void)ctl.jobs().cancel(spec.name);
      (void)ctl.launcher().stopJob(spec.name, Duration::zero());
    }
    if (killed && Deadline(limit.at() + kDrainLimit).expired()) break;
    if (auto now = ctl.jobs().get(spec.name); now.isOk()) rec = *now;
  }
  // The rest of the output, and no worker left behind to load the next run.
  const Deadline drain = Deadline::after(kDrainLimit);
  while (!ctl.launcher().livePids(spec.name).empty() && !drain.expired() && pump(std::chrono::milliseconds(50))) {
  }
  for (int i = 0; i < 5 && lines.summary().empty() && pump(std::chrono::milliseconds(60)); ++i) {
  }
  if (rec.phase != controller::JobPhase::kSucceeded) {
    const controller::JobCondition* failed = rec.findCondition(controller::kConditionFailed);
    const std::string why = failed != nullptr ? failed->message : controller::jobPhaseName(rec.phase);
    std::fprintf(stderr, "bench_train: job %s: %s\n", spec.name.c_str(), why.c_str());
    return "";
  }
  return lines.summary();
}

}  // namespace

double TrainSample::stepMs() const {
  return steps > 0 ? (compute + exposedComm + optimizer + data) * 1000.0 / static_cast<double>(steps) : 0;
}

TrainSample runTrainJob(const TrainRunOptions& o, JobSpec spec, int workers) {
  TrainSample s;
  spec.workers.count = spec.workers.min = spec.workers.max = workers;
  auto stateDir = TempDir::make("bench-train");
  if (!stateDir.isOk()) {
    std::fprintf(stderr, "bench_train: state directory: %s\n", stateDir.status().toString().c_str());
    return s;
  }
  controller::ControllerConfig cc;
  cc.listenHost = "127.0.0.1";
  cc.listenPort = 0;
  cc.stateDir = stateDir->path();
  cc.workerBinary = o.workerBin;
  cc.tieWorkersToProcess = true;
  cc.workerLogFormat = "json";
  // As ddpctl run: the operator's DDP_COMM_THREAD_PRIORITY, else normal-priority comm threads
  // when the workers oversubscribe the cores (Note [Comm thread priority]).
  if (auto p = runtime::workerCommPriority(spec, workers, usableCores(), o.operatorPriority)) {
    cc.commThreadPriority = commThreadPriorityName(*p);
  }
  std::string summary;
  if (auto ctl = controller::Controller::start(cc); ctl.isOk()) {
    summary = runJob(**ctl, spec);
    (*ctl)->stop();
  } else {
    std::fprintf(stderr, "bench_train: controller: %s\n", ctl.status().toString().c_str());
  }
  stateDir->remove();
  if (summary.empty()) return s;
  s.steps = static_cast<int64_t>(field(summary, "steps"));
  s.samplesPerS = field(summary, "samples_per_s");
  s.compute = field(summary, "compute_s");
  s.exposedComm = field(summary, "exposed_comm_s");
  s.hook = field(summary, "hook_s");
  s.optimizer = field(summary, "optimizer_s");
  s.data = field(summary, "data_s");
  s.ok = s.steps > 0;
  return s;
}

std::optional<TrainSample> medianSample(std::vector<TrainSample> v, size_t* okCount) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const TrainSample& s) { return !s.ok; }), v.end());
  if (okCount != nullptr) *okCount = v.size();
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end(), [](const TrainSample& a, const TrainSample& b) { return a.samplesPerS < b.samplesPerS; });
  return v[v.size() / 2];
}

}  // namespace ddp::bench
