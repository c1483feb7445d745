// bench_train: end-to-end training throughput of `ddp-worker` processes on this machine, run
// exactly as `ddpctl run` runs them (Note [bench_train runs]), for 1, 2 and 4 workers, MLP
// (784-256-256-10) and CNN, batch 64 per worker, plus the step-time breakdown of rank 0
// (compute, exposed communication, hook, optimizer); and the GPT of examples/gpt-fortunes.yaml
// on 1 and 2 workers (Note [bench_train GPT rows]).
//
//   build/bin/bench_train [--json] [--models mlp,cnn,gpt] [--workers 1,2,4] [--repeats 3]
//                         [--mlp-steps 400] [--cnn-steps 120] [--worker-bin PATH]
//                         [--gpt-steps 60] [--gpt-workers 1,2] [--gpt-tokens DIR]
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
// cancelled and its workers killed (bench/train/train_job.cc).
//
// Note [bench_train GPT rows]
// The job of examples/gpt-fortunes.yaml (byte-level GPT, 4 layers, 4 heads, dModel 128, context
// 128, batch 16 windows per worker, AdamW with its cosine schedule) shortened to --gpt-steps
// steps with only a final evaluation of 32 windows, on --gpt-workers workers (1 and 2). Its
// token files are --gpt-tokens DIR's train.bin and val.bin, or else the fortunes corpus
// tokenized as `ddpctl tokenize --bytes` does, into a temporary folder. JSON lines:
// {"bench":"train","model":"gpt","workers","tokens_per_s","ms_per_step","mfu",
//  "speedup_vs_1_worker","compute_ms","exposed_comm_ms","hook_ms","optimizer_ms","data_ms",
//  "peak_gflops","steps","repeats","device":"cpu"} (the first five are a contract: docs and
// scripts read them). tokens_per_s counts every worker's tokens over the step loop; ms_per_step
// is rank 0's compute + exposed communication + optimizer + data per step; mfu is
// runtime::modelFlopsUtilisation of tokens_per_s against peak_gflops per worker, the sgemm
// speed bench_train measures once at its start on one thread (runtime::measureCpuPeakFlops,
// the denominator a CPU worker uses for its own MFU; docs/TRAINING.md).
//
// Note [bench_train GPU rows]
// The GPU check asks kernels::cudaDeviceCount() and comm::ncclBackendAvailable(), which exist in
// both builds (0 / false without CUDA), so a CPU-only build links no CUDA and simply reports
// "this build has no CUDA". The check is about this program's build: the worker given by
// --worker-bin should come from the same build (a CPU-only worker refuses spec.device cuda, and
// the GPU rows then fail, exit status 1). The launcher starts the workers by fork + exec, so
// the CUDA driver state the check may create in this process does not reach them.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/common/bench_args.h"
#include "bench/train/gpt_rows.h"
#include "bench/train/train_job.h"
#include "common/jobspec/job_spec.h"
#include "common/log.h"
#include "kernels/layer_ops.h"
#include "worker/comm/nccl_backend.h"
#include "worker/control/launch_env.h"
#include "worker/data/fashion_mnist.h"

namespace {

using namespace ddp;
using ddp::bench::GptBench;
using ddp::bench::programDir;
using ddp::bench::splitList;
using ddp::bench::TrainSample;

struct Options {
  bool json = false;
  std::vector<std::string> models = {"mlp", "cnn", "gpt"};
  std::vector<int> workers = {1, 2, 4};
  int repeats = 3;
  int mlpSteps = 400;
  int cnnSteps = 120;
  int gptSteps = 60;
  std::vector<int> gptWorkers = {1, 2};
  std::string gptTokens;
  std::string gpu = "auto";  // auto | on | off
  std::vector<std::string> gpuModels = {"cnn", "mlp_wide"};
  int gpuSteps = 500;
  int gpuBatch = 256;
  std::string dataDir = JobSpec().data.dir;  // the Fashion-MNIST IDX files
  ddp::bench::TrainRunOptions run;
};

// One measured configuration: a model on `workers` CPU workers, or on 1 worker with cuda.
struct Config {
  std::string model;
  int workers = 1;
  bool cuda = false;
  JobSpec spec;
};

std::vector<int> intList(const std::string& s) {
  std::vector<int> out;
  for (const auto& w : splitList(s)) out.push_back(std::atoi(w.c_str()));
  return out;
}

// False on a flag it does not know or a bad value.
bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--json") o->json = true;
    else if (a == "--models") o->models = splitList(next());
    else if (a == "--workers") o->workers = intList(next());
    else if (a == "--repeats") o->repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--mlp-steps") o->mlpSteps = std::atoi(next().c_str());
    else if (a == "--cnn-steps") o->cnnSteps = std::atoi(next().c_str());
    else if (a == "--gpt-steps") o->gptSteps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--gpt-workers") o->gptWorkers = intList(next());
    else if (a == "--gpt-tokens") o->gptTokens = next();
    else if (a == "--worker-bin") o->run.workerBin = next();
    else if (a == "--gpu") o->gpu = next();
    else if (a == "--gpu-models") o->gpuModels = splitList(next());
    else if (a == "--gpu-steps") o->gpuSteps = std::atoi(next().c_str());
    else if (a == "--gpu-batch") o->gpuBatch = std::max(1, std::atoi(next().c_str()));
    else if (a == "--data-dir") o->dataDir = next();
    else return false;
  }
  const auto known = [](const std::vector<std::string>& v, std::initializer_list<const char*> names) {
    return std::all_of(v.begin(), v.end(), [&](const std::string& m) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return m == n; });
    });
  };
  return (o->gpu == "auto" || o->gpu == "on" || o->gpu == "off") && known(o->gpuModels, {"cnn", "mlp_wide"}) &&
         known(o->models, {"mlp", "cnn", "gpt"});
}

// Empty when this build can train on a visible GPU; otherwise why not.
std::string gpuUnavailableReason() {
  if (!comm::ncclBackendAvailable()) return "this build has no CUDA";
  if (kernels::cudaDeviceCount() == 0) return "no CUDA device is visible";
  return "";
}

bool wants(const Options& o, const char* model) {
  return std::find(o.models.begin(), o.models.end(), model) != o.models.end();
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

// One MLP/CNN row (CPU: `base` is the 1-worker samples/s of the model; GPU: world size 1).
void printSampleRow(const Options& o, const std::string& m, int w, const TrainSample& med, size_t repeats,
                    double base, bool cuda) {
  const double speedup = base > 0 ? med.samplesPerS / base : 0;
  const double perStep = 1000.0 / static_cast<double>(med.steps);
  if (o.json) {
    std::printf("{\"bench\":\"train\",\"model\":\"%s\",\"workers\":%d,\"samples_per_s\":%.1f,"
                "\"speedup_vs_1_worker\":%.3f,\"step_ms\":%.3f,\"compute_ms\":%.3f,\"exposed_comm_ms\":%.3f,"
                "\"hook_ms\":%.3f,\"optimizer_ms\":%.3f,\"data_ms\":%.3f,\"steps\":%lld,\"repeats\":%zu,"
                "\"device\":\"%s\"}\n",
                m.c_str(), w, med.samplesPerS, speedup, med.stepMs(), med.compute * perStep,
                med.exposedComm * perStep, med.hook * perStep, med.optimizer * perStep, med.data * perStep,
                static_cast<long long>(med.steps), repeats, cuda ? "cuda" : "cpu");
  } else {
    std::printf("%-8s %7d %12.0f %7.2fx %9.2f %10.2f %13.2f %8.2f %11.2f\n", m.c_str(), w, med.samplesPerS, speedup,
                med.stepMs(), med.compute * perStep, med.exposedComm * perStep, med.hook * perStep,
                med.optimizer * perStep);
  }
  std::fflush(stdout);
}

// The rows of every configuration, in the order of --models (GPU rows last); 1 when a
// configuration had no successful run.
int printRows(const Options& o, const std::vector<Config>& configs, const std::vector<std::vector<TrainSample>>& results,
              const GptBench* gpt) {
  int rc = 0;
  bool header = false;
  for (const auto& m : o.models) {
    if (m == "gpt") {
      std::vector<int> w;
      std::vector<std::vector<TrainSample>> r;
      for (size_t c = 0; c < configs.size(); ++c) {
        if (configs[c].model == "gpt") w.push_back(configs[c].workers), r.push_back(results[c]);
      }
      if (gpt != nullptr && !gpt->printRows(w, r, o.json)) rc = 1;
      continue;
    }
    double base = 0;
    for (size_t c = 0; c < configs.size(); ++c) {
      if (configs[c].cuda || configs[c].model != m) continue;
      size_t ok = 0;
      const std::optional<TrainSample> med = ddp::bench::medianSample(results[c], &ok);
      if (!med) {
        rc = 1;
        continue;
      }
      if (configs[c].workers == 1) base = med->samplesPerS;
      if (!o.json && !header) {
        std::printf("%-8s %7s %12s %8s %9s %10s %13s %8s %11s\n", "model", "workers", "samples/s", "speedup",
                    "step ms", "compute ms", "exp. comm ms", "hook ms", "optim ms");
        header = true;
      }
      printSampleRow(o, m, configs[c].workers, *med, ok, base, false);
    }
  }
  bool gpuHeader = false;
  for (size_t c = 0; c < configs.size(); ++c) {
    if (!configs[c].cuda) continue;
    size_t ok = 0;
    const std::optional<TrainSample> med = ddp::bench::medianSample(results[c], &ok);
    if (!med) {
      rc = 1;
      continue;
    }
    if (!o.json && !gpuHeader) {
      std::printf("# GPU: spec.device cuda, 1 worker (NCCL), batch %d\n", o.gpuBatch);
      std::printf("%-8s %7s %12s %8s %9s %10s %13s %8s %11s\n", "model", "workers", "samples/s", "speedup",
                  "step ms", "compute ms", "exp. comm ms", "hook ms", "optim ms");
      gpuHeader = true;
    }
    printSampleRow(o, configs[c].model, 1, *med, ok, med->samplesPerS, true);
  }
  return rc;
}

// 0 when the GPU rows run, 1 when they are skipped, 2 for --gpu on without a GPU.
int checkGpu(const Options& o) {
  if (o.gpu == "off" || o.gpuModels.empty()) return 1;
  const std::string why = gpuUnavailableReason();
  if (why.empty()) return 0;
  if (o.gpu == "on") {
    std::fprintf(stderr, "bench_train: --gpu on but no GPU to run on: %s\n", why.c_str());
    return 2;
  }
  std::printf("# no GPU: GPU rows skipped (%s)\n", why.c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parseOptions(argc, argv, &o)) {
    std::fprintf(stderr, "usage: bench_train [--json] [--models mlp,cnn,gpt] [--workers 1,2,4] [--repeats N] "
                         "[--mlp-steps N] [--cnn-steps N] [--gpt-steps N] [--gpt-workers 1,2] [--gpt-tokens DIR] "
                         "[--worker-bin PATH] [--gpu auto|on|off] [--gpu-models cnn,mlp_wide] [--gpu-steps N] "
                         "[--gpu-batch N] [--data-dir DIR]\n");
    return 2;
  }
  auto operatorPriority = runtime::operatorCommPriority(runtime::processEnv());
  if (!operatorPriority.isOk()) {
    std::fprintf(stderr, "bench_train: %s\n", operatorPriority.status().message().c_str());
    return 2;
  }
  o.run.operatorPriority = *operatorPriority;
  const int gpu = checkGpu(o);
  if (gpu == 2) return 2;
  if (o.run.workerBin.empty()) o.run.workerBin = programDir() + "/ddp-worker";
  if (::access(o.run.workerBin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_train: no worker program at %s (build ddp-worker)\n", o.run.workerBin.c_str());
    return 2;
  }
  const bool fashion = wants(o, "mlp") || wants(o, "cnn") || gpu == 0;
  if (fashion && !data::fashionMnistAvailable(o.dataDir)) {
    std::fprintf(stderr, "bench_train: the Fashion-MNIST files are not in %s (apt-get install %s)\n",
                 o.dataDir.c_str(), data::kFashionMnistPackage);
    return 2;
  }
  std::unique_ptr<GptBench> gpt;
  if (wants(o, "gpt")) {
    auto prepared = GptBench::prepare({std::string(DDP_SOURCE_DIR) + "/examples/gpt-fortunes.yaml", o.gptTokens,
                                       o.gptSteps});
    if (!prepared.isOk()) {
      std::fprintf(stderr, "bench_train: gpt rows: %s\n", prepared.status().toString().c_str());
      return 2;
    }
    gpt = std::move(*prepared);
  }
  // The embedded controllers' info lines (phase changes) would only interleave the figures.
  log::setLevel(log::Level::kWarning);
  std::vector<Config> configs;
  for (const auto& m : o.models) {
    if (m == "gpt") {
      for (int w : o.gptWorkers) configs.push_back({m, w, false, gpt->spec()});
      continue;
    }
    JobSpec spec = benchSpec(m, m == "cnn" ? o.cnnSteps : o.mlpSteps);
    spec.data.dir = o.dataDir;
    for (int w : o.workers) configs.push_back({m, w, false, spec});
  }
  for (const auto& m : gpu == 0 ? o.gpuModels : std::vector<std::string>{}) {
    configs.push_back({m, 1, true, benchSpec(m, o.gpuSteps, true, o.gpuBatch)});
    configs.back().spec.data.dir = o.dataDir;
  }
  // Round-robin: repeat r of every configuration before repeat r + 1 of any.
  std::vector<std::vector<TrainSample>> results(configs.size());
  for (int r = 0; r < o.repeats; ++r) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const Config& cfg = configs[c];
      TrainSample s = ddp::bench::runTrainJob(o.run, cfg.spec, cfg.workers);
      if (!s.ok) {
        std::fprintf(stderr, "bench_train: %s with %d workers%s failed\n", cfg.model.c_str(), cfg.workers,
                     cfg.cuda ? " on cuda" : "");
      }
      results[c].push_back(s);
    }
  }
  return printRows(o, configs, results, gpt.get());
}
