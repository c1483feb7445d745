// bench_train: end-to-end training throughput of `ddp-worker` processes on this machine (the
// same path as `ddpctl run`: in-process HTTP store, Gloo over loopback, one compute thread per
// worker) for 1, 2 and 4 workers, MLP (784-256-256-10) and CNN, batch 64 per worker, plus the
// step-time breakdown of rank 0 (compute, exposed communication, hook, optimizer).
//
//   build/bin/bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats 3]
//                         [--mlp-steps 400] [--cnn-steps 120] [--worker-bin PATH]
//                         [--gpu auto|on|off] [--gpu-models cnn,mlp_wide] [--gpu-steps 500]
//                         [--gpu-batch 256]
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
// Note [bench_train GPU rows]
// The GPU check asks kernels::cudaDeviceCount() and comm::ncclBackendAvailable(), which exist in
// both builds (0 / false without CUDA), so a CPU-only build links no CUDA and simply reports
// "this build has no CUDA". The check is about this program's build: the worker given by
// --worker-bin should come from the same build (a CPU-only worker refuses spec.device cuda, and
// the GPU rows then fail, exit status 1). The child workers are started by fork + exec, so the
// CUDA driver state the check may create in this process does not reach them.
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/layer_ops.h"
#include "common/store/http_store_server.h"
#include "worker/comm/nccl_backend.h"
#include "worker/runtime/launch_env.h"
#include "common/process/process_supervisor.h"

namespace {

using namespace ddp;

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
};

// One measured configuration: a model on `workers` CPU workers, or on 1 worker with cuda.
struct Config {
  std::string model;
  int workers = 1;
  bool cuda = false;
  std::string jobPath;
};

struct Sample {
  double samplesPerS = 0, compute = 0, exposedComm = 0, hook = 0, optimizer = 0, data = 0;
  int64_t steps = 0;
  bool ok = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

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

std::string jobYaml(const std::string& model, int steps, bool cuda = false, int batch = 64) {
  std::string m = model == "cnn"        ? "  model: {type: cnn, convChannels: [8, 16], kernelSize: 3, hidden: [128]}\n"
                  : model == "mlp_wide" ? "  model: {type: mlp, hidden: [4096, 4096]}\n"
                                        : "  model: {type: mlp, hidden: [256, 256]}\n";
  std::string name = "bench-" + std::string(model == "mlp_wide" ? "mlp-wide" : model) + (cuda ? "-cuda" : "");
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name + "}\nspec:\n" + m +
         (cuda ? "  device: cuda\n" : "") +
         "  threadsPerWorker: 1\n"
         "  data: {dataset: fashion-mnist, batchSize: " + std::to_string(batch) + ", limit: 16384}\n"
         "  eval: {everyEpoch: false, limit: 1000}\n"
         "  optimizer: {type: adam, lr: 0.001}\n"
         "  steps: " + std::to_string(steps) + "\n  seed: 1\n";
}

Sample runOnce(const Options& o, const std::string& jobPath, int workers) {
  comm::HttpStoreServer server;
  Sample s;
  if (Status st = server.start(); !st.isOk()) {
    std::fprintf(stderr, "bench_train: store: %s\n", st.toString().c_str());
    return s;
  }
  // As ddpctl run: normal-priority comm threads when the workers oversubscribe the cores.
  JobSpec spec;  // threadsPerWorker 1, commThreadPriority auto: as jobYaml() writes them
  const auto commPriorityEnv = runtime::commPriorityEnvFor(spec, workers, runtime::usableCores());
  std::vector<runtime::ProcessSpec> specs;
  for (int r = 0; r < workers; ++r) {
    specs.push_back({o.workerBin, {}, {"DDP_STORE_ADDR=" + server.address(), "DDP_JOB_FILE=" + jobPath,
                                       "DDP_RANK=" + std::to_string(r), "DDP_WORLD_SIZE=" + std::to_string(workers),
                                       "DDP_LOG_FORMAT=json", "DDP_LOG_LEVEL=warning"}});
    if (commPriorityEnv) specs.back().extraEnv.push_back(*commPriorityEnv);
  }
  std::string summary;
  runtime::ProcessSupervisor sup({}, [&](const runtime::RoutedLine& l) {
    if (l.target == runtime::RouteTarget::kStdout) {
      if (l.text.find("\"event\":\"summary\"") != std::string::npos) summary = l.text;
    } else {
      std::fprintf(stderr, "%s\n", l.text.c_str());
    }
  });
  if (Status st = sup.start(specs); !st.isOk()) {
    std::fprintf(stderr, "bench_train: %s\n", st.toString().c_str());
    return s;
  }
  auto outcome = sup.run(Deadline::after(std::chrono::minutes(10)));
  if (!outcome.isOk() || !outcome->allOk() || summary.empty()) return s;
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
    else if (a == "--models") o.models = split(next());
    else if (a == "--workers") {
      o.workers.clear();
      for (const auto& w : split(next())) o.workers.push_back(std::atoi(w.c_str()));
    } else if (a == "--repeats") o.repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--mlp-steps") o.mlpSteps = std::atoi(next().c_str());
    else if (a == "--cnn-steps") o.cnnSteps = std::atoi(next().c_str());
    else if (a == "--worker-bin") o.workerBin = next();
    else if (a == "--gpu") o.gpu = next();
    else if (a == "--gpu-models") o.gpuModels = split(next());
    else if (a == "--gpu-steps") o.gpuSteps = std::atoi(next().c_str());
    else if (a == "--gpu-batch") o.gpuBatch = std::max(1, std::atoi(next().c_str()));
    else badArg = true;
  }
  const bool gpuModelsOk = std::all_of(o.gpuModels.begin(), o.gpuModels.end(),
                                       [](const std::string& m) { return m == "cnn" || m == "mlp_wide"; });
  if (badArg || (o.gpu != "auto" && o.gpu != "on" && o.gpu != "off") || !gpuModelsOk) {
    std::fprintf(stderr, "usage: bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats N] "
                         "[--mlp-steps N] [--cnn-steps N] [--worker-bin PATH] [--gpu auto|on|off] "
                         "[--gpu-models cnn,mlp_wide] [--gpu-steps N] [--gpu-batch N]\n");
    return 2;
  }
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
  if (o.workerBin.empty()) o.workerBin = selfDir() + "/ddp-worker";
  if (::access(o.workerBin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_train: no worker program at %s (build ddp-worker)\n", o.workerBin.c_str());
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("bench_train_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<Config> configs;
  for (const auto& m : o.models) {
    const std::string job = dir + "/" + m + ".yaml";
    std::ofstream(job) << jobYaml(m, m == "cnn" ? o.cnnSteps : o.mlpSteps);
    for (int w : o.workers) configs.push_back({m, w, false, job});
  }
  if (gpuRows) {
    for (const auto& m : o.gpuModels) {
      const std::string job = dir + "/" + m + "_cuda.yaml";
      std::ofstream(job) << jobYaml(m, o.gpuSteps, true, o.gpuBatch);
      configs.push_back({m, 1, true, job});
    }
  }
  // Round-robin: repeat r of every configuration before repeat r + 1 of any.
  std::vector<std::vector<Sample>> results(configs.size());
  for (int r = 0; r < o.repeats; ++r) {
    for (size_t c = 0; c < configs.size(); ++c) {
      const Config& cfg = configs[c];
      Sample s = runOnce(o, cfg.jobPath, cfg.workers);
      if (!s.ok) {
        std::fprintf(stderr, "bench_train: %s with %d workers%s failed\n", cfg.model.c_str(), cfg.workers,
                     cfg.cuda ? " on cuda" : "");
      }
      results[c].push_back(s);
    }
  }
  std::filesystem::remove_all(dir);
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
