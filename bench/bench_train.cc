// bench_train: end-to-end training throughput of `ddp-worker` processes on this machine, run
// exactly as `ddpctl run` runs them (Note [bench_train runs]), for 1, 2 and 4 workers, MLP
// (784-256-256-10) and CNN, batch 64 per worker, plus the step-time breakdown of rank 0
// (compute, exposed communication, hook, optimizer).
//
//   build/bin/bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats 3]
//                         [--mlp-steps 400] [--cnn-steps 120] [--worker-bin PATH]
//                         [--gpu auto|on|off] [--gpu-models cnn,mlp_wide] [--gpu-steps 500]
//                         [--gpu-batch 256] [--data-dir DIR]
//
// --models '' leaves the CPU rows out (the GPU check runs only the GPU rows); --data-dir reads
// the Fashion-MNIST IDX files from DIR instead of the Debian package's folder (the GPU machine
// has no Debian packages: the GPU bundle carries the first samples, Note [GPU bundle]).
//
// GPU rows (Note [bench_train GPU rows]): with a visible CUDA device, the same jobs with
// `spec.device: cuda` and 1 worker (world size 1, ProcessGroup of Gloo + NCCL): the CNN of the
// CPU rows and `mlp_wide` (784-4096-4096-10), batch 256, Adam. `--gpu auto` (default) runs them
// when a GPU is present and otherwise prints "# no GPU: GPU rows skipped (<reason>)"; `--gpu on`
// without a GPU exits 2 before measuring anything; `--gpu off` skips them silently.
//
// Each configuration runs `repeats` times, round-robin over configurations (so machine noise
// spreads evenly), and the median samples/s is reported with its ratio to 1 worker of the
// same model measured in the same run. samples_per_s counts every worker's samples over the
// step loop only (startup, rendezvous, data loading and the final evaluation excluded).
// JSON lines: {"bench":"train","model","workers","samples_per_s","speedup_vs_1_worker",
//   "step_ms","compute_ms","exposed_comm_ms","hook_ms","optimizer_ms","data_ms","steps","repeats",
//   "device"} with device "cpu" or "cuda" (GPU rows: models cnn and mlp_wide, workers 1,
//   speedup_vs_1_worker 1).
//
// Note [bench_train runs]
// Every run is one job on a fresh in-process controller (controller::Controller with the local
// launcher and tieWorkersToProcess, on a temporary state dir removed afterwards), the code path
// of `ddpctl run`: the bench submits the JobSpec it built (spec.workers.count = min = max = the
// run's workers), the launcher starts the workers with the environment of
// common/launch/worker_env.h (controller URL, job name and token, worker id; JSON progress
// lines; the comm thread priority ddpctl run would choose: the operator's
// DDP_COMM_THREAD_PRIORITY, else normal when the workers oversubscribe the cores), and the workers get rank, world size and the spec from the controller's
// rendezvous. The figures are rank 0's `{"event":"summary",...}` line (Note [Progress line
// contract]), read from the job's merged log; the run counts when the job Succeeded and that
// line was seen. The workers' warnings, errors and non-log lines (a crash) are copied to
// stderr; a failed job's condition message too. A run gets kRunLimit; then the job is
// cancelled and its workers killed.
//
// Note [bench_train GPU rows]
// The GPU check asks kernels::cudaDeviceCount() and comm::ncclBackendAvailable(), which exist in
// both builds (0 / false without CUDA), so a CPU-only build links no CUDA and simply reports
// "this build has no CUDA". The check is about this program's build: the worker given by
// --worker-bin should come from the same build (a CPU-only worker refuses spec.device cuda, and
// the GPU rows then fail, exit status 1). The launcher starts the workers by fork + exec, so
// the CUDA driver state the check may create in this process does not reach them.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_args.h"
#include "common/jobspec/job_spec.h"
#include "common/log.h"
#include "common/process/output_router.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "kernels/layer_ops.h"
#include "worker/comm/nccl_backend.h"
#include "worker/data/fashion_mnist.h"
#include "worker/control/launch_env.h"

namespace {

using namespace ddp;
using ddp::bench::programDir;
using ddp::bench::splitList;

// One run's bound: past it the job is cancelled and its workers killed.
constexpr Duration kRunLimit = std::chrono::minutes(10);
// After the job ended: how long its workers get to exit and its log to be read.
constexpr Duration kDrainLimit = std::chrono::seconds(30);

struct Options {
  bool json = false;
  std::vector<std::string> models = {"mlp", "cnn"};
  std::vector<int> workers = {1, 2, 4};
  int repeats = 3;
  int mlpSteps = 400;
  int cnnSteps = 120;
  std::string workerBin;
  std::string gpu = "auto";  // auto | on | off
  std::vector<std::string> gpuModels = {"cnn", "mlp_wide"};
  int gpuSteps = 500;
  int gpuBatch = 256;
  std::string dataDir = JobSpec().data.dir;  // the Fashion-MNIST IDX files
  std::optional<CommThreadPriority> operatorPriority;  // this process's DDP_COMM_THREAD_PRIORITY
};

// One measured configuration: a model on `workers` CPU workers, or on 1 worker with cuda.
struct Config {
  std::string model;
  int workers = 1;
  bool cuda = false;
  JobSpec spec;
};

struct Sample {
  double samplesPerS = 0, compute = 0, exposedComm = 0, hook = 0, optimizer = 0, data = 0;
  int64_t steps = 0;
  bool ok = false;
};


double field(const std::string& line, const std::string& name) {
  auto pos = line.find("\"" + name + "\":");
  if (pos == std::string::npos) return 0;
  return std::strtod(line.c_str() + pos + name.size() + 3, nullptr);
}

// Empty when this build can train on a visible GPU; otherwise why not.
std::string gpuUnavailableReason() {
  if (!comm::ncclBackendAvailable()) return "this build has no CUDA";
  if (kernels::cudaDeviceCount() == 0) return "no CUDA device is visible";
  return "";
}

// The job of one configuration (spec.workers is set per run): Fashion-MNIST (first 16384
// samples), Adam lr 0.001, `steps` steps, seed 1, one compute thread per worker, evaluation on
// 1000 test samples at the end only.
JobSpec benchSpec(const std::string& model, int steps, bool cuda = false, int batch = 64) {
  JobSpec spec;
  spec.name = "bench-" + std::string(model == "mlp_wide" ? "mlp-wide" : model) + (cuda ? "-cuda" : "");
  if (model == "cnn") {
    spec.model.type = ModelType::kCnn;
    spec.model.convChannels = {8, 16};
    spec.model.kernelSize = 3;
    spec.model.hidden = {128};
  } else {
    spec.model.type = ModelType::kMlp;
    spec.model.hidden = model == "mlp_wide" ? std::vector<int64_t>{4096, 4096} : std::vector<int64_t>{256, 256};
  }
  spec.device = cuda ? JobDevice::kCuda : JobDevice::kCpu;
  spec.threadsPerWorker = 1;
  spec.data.dataset = DatasetKind::kFashionMnist;
  spec.data.batchSize = batch;
  spec.data.limit = 16384;
  spec.eval.everyEpoch = false;
  spec.eval.limit = 1000;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 0.001;
  spec.steps = steps;
  spec.seed = 1;
  return spec;
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

// Runs `spec` to its end on `ctl` (Note [bench_train runs]). Returns the summary line, empty
// when the job did not succeed or printed none (the reason is on stderr).
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

Sample runOnce(const Options& o, JobSpec spec, int workers) {
  Sample s;
  spec.workers.count = spec.workers.min = spec.workers.max = workers;
  char stateTemplate[] = "/tmp/bench-train-XXXXXX";
  if (::mkdtemp(stateTemplate) == nullptr) {
    std::perror("bench_train: cannot create a state directory under /tmp");
    return s;
  }
  controller::ControllerConfig cc;
  cc.listenHost = "127.0.0.1";
  cc.listenPort = 0;
  cc.stateDir = stateTemplate;
  cc.workerBinary = o.workerBin;
  cc.tieWorkersToProcess = true;
  cc.workerLogFormat = "json";
  // As ddpctl run: the operator's DDP_COMM_THREAD_PRIORITY, else normal-priority comm threads
  // when the workers oversubscribe the cores (Note [Comm thread priority]).
  if (auto p = runtime::workerCommPriority(spec, workers, runtime::usableCores(), o.operatorPriority)) {
    cc.commThreadPriority = commThreadPriorityName(*p);
  }
  std::string summary;
  if (auto ctl = controller::Controller::start(cc); ctl.isOk()) {
    summary = runJob(**ctl, spec);
    (*ctl)->stop();
  } else {
    std::fprintf(stderr, "bench_train: controller: %s\n", ctl.status().toString().c_str());
  }
  std::error_code ignored;
  std::filesystem::remove_all(stateTemplate, ignored);
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool badArg = false;
  for (int i = 1; i < argc && !badArg; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--json") o.json = true;
    else if (a == "--models") o.models = splitList(next());
    else if (a == "--workers") {
      o.workers.clear();
      for (const auto& w : splitList(next())) o.workers.push_back(std::atoi(w.c_str()));
    } else if (a == "--repeats") o.repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--mlp-steps") o.mlpSteps = std::atoi(next().c_str());
    else if (a == "--cnn-steps") o.cnnSteps = std::atoi(next().c_str());
    else if (a == "--worker-bin") o.workerBin = next();
    else if (a == "--gpu") o.gpu = next();
    else if (a == "--gpu-models") o.gpuModels = splitList(next());
    else if (a == "--gpu-steps") o.gpuSteps = std::atoi(next().c_str());
    else if (a == "--gpu-batch") o.gpuBatch = std::max(1, std::atoi(next().c_str()));
    else if (a == "--data-dir") o.dataDir = next();
    else badArg = true;
  }
  const bool gpuModelsOk = std::all_of(o.gpuModels.begin(), o.gpuModels.end(),
                                       [](const std::string& m) { return m == "cnn" || m == "mlp_wide"; });
  if (badArg || (o.gpu != "auto" && o.gpu != "on" && o.gpu != "off") || !gpuModelsOk) {
    std::fprintf(stderr, "usage: bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats N] "
                         "[--mlp-steps N] [--cnn-steps N] [--worker-bin PATH] [--gpu auto|on|off] "
                         "[--gpu-models cnn,mlp_wide] [--gpu-steps N] [--gpu-batch N] [--data-dir DIR]\n");
    return 2;
  }
  auto operatorPriority = runtime::operatorCommPriority(runtime::processEnv());
  if (!operatorPriority.isOk()) {
    std::fprintf(stderr, "bench_train: %s\n", operatorPriority.status().message().c_str());
    return 2;
  }
  o.operatorPriority = *operatorPriority;
  bool gpuRows = false;
  if (o.gpu != "off") {
    const std::string why = gpuUnavailableReason();
    if (why.empty()) {
      gpuRows = !o.gpuModels.empty();
    } else if (o.gpu == "on") {
      std::fprintf(stderr, "bench_train: --gpu on but no GPU to run on: %s\n", why.c_str());
      return 2;
    } else {
      std::printf("# no GPU: GPU rows skipped (%s)\n", why.c_str());
      std::fflush(stdout);
    }
  }
  if (o.workerBin.empty()) o.workerBin = programDir() + "/ddp-worker";
  if (::access(o.workerBin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_train: no worker program at %s (build ddp-worker)\n", o.workerBin.c_str());
    return 2;
  }
  if (!data::fashionMnistAvailable(o.dataDir)) {
    std::fprintf(stderr, "bench_train: the Fashion-MNIST files are not in %s (apt-get install %s)\n",
                 o.dataDir.c_str(), data::kFashionMnistPackage);
    return 2;
  }
  // The embedded controllers' info lines (phase changes) would only interleave the figures.
  log::setLevel(log::Level::kWarning);
  std::vector<Config> configs;
  for (const auto& m : o.models) {
    const JobSpec spec = benchSpec(m, m == "cnn" ? o.cnnSteps : o.mlpSteps);
    for (int w : o.workers) configs.push_back({m, w, false, spec});
  }
  if (gpuRows) {
    for (const auto& m : o.gpuModels) configs.push_back({m, 1, true, benchSpec(m, o.gpuSteps, true, o.gpuBatch)});
  }
  for (Config& c : configs) c.spec.data.dir = o.dataDir;
  // Round-robin: repeat r of every configuration before repeat r + 1 of any.
  std::vector<std::vector<Sample>> results(configs.size());
  for (int r = 0; r < o.repeats; ++r) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const Config& cfg = configs[c];
      Sample s = runOnce(o, cfg.spec, cfg.workers);
      if (!s.ok) {
        std::fprintf(stderr, "bench_train: %s with %d workers%s failed\n", cfg.model.c_str(), cfg.workers,
                     cfg.cuda ? " on cuda" : "");
      }
      results[c].push_back(s);
    }
  }
  if (!o.json) {
    std::printf("%-5s %7s %12s %8s %9s %10s %13s %8s %11s\n", "model", "workers", "samples/s", "speedup", "step ms",
                "compute ms", "exp. comm ms", "hook ms", "optim ms");
  }
  int rc = 0;
  bool gpuHeader = false;
  for (const auto& m : o.models) {
    double base = 0;
    for (size_t c = 0; c < configs.size(); ++c) {
      if (configs[c].cuda || configs[c].model != m) continue;
      const int w = configs[c].workers;
      auto v = results[c];
      v.erase(std::remove_if(v.begin(), v.end(), [](const Sample& s) { return !s.ok; }), v.end());
      if (v.empty()) {
        rc = 1;
        continue;
      }
      std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.samplesPerS < b.samplesPerS; });
      const Sample& med = v[v.size() / 2];
      if (w == 1) base = med.samplesPerS;
      const double speedup = base > 0 ? med.samplesPerS / base : 0;
      const double perStep = 1000.0 / static_cast<double>(med.steps);
      const double stepMs = (med.compute + med.exposedComm + med.optimizer + med.data) * perStep;
      if (o.json) {
        std::printf("{\"bench\":\"train\",\"model\":\"%s\",\"workers\":%d,\"samples_per_s\":%.1f,"
                    "\"speedup_vs_1_worker\":%.3f,\"step_ms\":%.3f,\"compute_ms\":%.3f,\"exposed_comm_ms\":%.3f,"
                    "\"hook_ms\":%.3f,\"optimizer_ms\":%.3f,\"data_ms\":%.3f,\"steps\":%lld,\"repeats\":%zu,"
                    "\"device\":\"cpu\"}\n",
                    m.c_str(), w, med.samplesPerS, speedup, stepMs, med.compute * perStep, med.exposedComm * perStep,
                    med.hook * perStep, med.optimizer * perStep, med.data * perStep, static_cast<long long>(med.steps),
                    v.size());
      } else {
        std::printf("%-5s %7d %12.0f %7.2fx %9.2f %10.2f %13.2f %8.2f %11.2f\n", m.c_str(), w, med.samplesPerS, speedup,
                    stepMs, med.compute * perStep, med.exposedComm * perStep, med.hook * perStep,
                    med.optimizer * perStep);
      }
      std::fflush(stdout);
    }
  }
  // GPU rows: world size 1, so the 1-worker baseline is the row itself.
  for (size_t c = 0; c < configs.size(); ++c) {
    if (!configs[c].cuda) continue;
    auto v = results[c];
    v.erase(std::remove_if(v.begin(), v.end(), [](const Sample& s) { return !s.ok; }), v.end());
    if (v.empty()) {
      rc = 1;
      continue;
    }
    std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.samplesPerS < b.samplesPerS; });
    const Sample& med = v[v.size() / 2];
    const double perStep = 1000.0 / static_cast<double>(med.steps);
    const double stepMs = (med.compute + med.exposedComm + med.optimizer + med.data) * perStep;
    const char* m = configs[c].model.c_str();
    if (o.json) {
      std::printf("{\"bench\":\"train\",\"model\":\"%s\",\"workers\":1,\"samples_per_s\":%.1f,"
                  "\"speedup_vs_1_worker\":1.000,\"step_ms\":%.3f,\"compute_ms\":%.3f,\"exposed_comm_ms\":%.3f,"
                  "\"hook_ms\":%.3f,\"optimizer_ms\":%.3f,\"data_ms\":%.3f,\"steps\":%lld,\"repeats\":%zu,"
                  "\"device\":\"cuda\"}\n",
                  m, med.samplesPerS, stepMs, med.compute * perStep, med.exposedComm * perStep, med.hook * perStep,
                  med.optimizer * perStep, med.data * perStep, static_cast<long long>(med.steps), v.size());
    } else {
      if (!gpuHeader) {
        std::printf("# GPU: spec.device cuda, 1 worker (NCCL), batch %d\n", o.gpuBatch);
        std::printf("%-8s %7s %12s %8s %9s %10s %13s %8s %11s\n", "model", "workers", "samples/s", "speedup",
                    "step ms", "compute ms", "exp. comm ms", "hook ms", "optim ms");
        gpuHeader = true;
      }
      std::printf("%-8s %7d %12.0f %7.2fx %9.2f %10.2f %13.2f %8.2f %11.2f\n", m, 1, med.samplesPerS, 1.0, stepMs,
                  med.compute * perStep, med.exposedComm * perStep, med.hook * perStep, med.optimizer * perStep);
    }
    std::fflush(stdout);
  }
  return rc;
}
