// bench_train: end-to-end training throughput of `ddp-worker` processes on this machine (the
// same path as `ddpctl run`: in-process HTTP store, Gloo over loopback, one compute thread per
// worker) for 1, 2 and 4 workers, MLP (784-256-256-10) and CNN, batch 64 per worker, plus the
// step-time breakdown of rank 0 (compute, exposed communication, hook, optimizer).
//
//   build/bin/bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats 3]
//                         [--mlp-steps 400] [--cnn-steps 120] [--worker-bin PATH]
//
// Each configuration runs `repeats` times, round-robin over configurations (so machine noise
// spreads evenly), and the median samples/s is reported with its ratio to 1 worker of the
// same model measured in the same run. samples_per_s counts every worker's samples over the
// step loop only (startup, rendezvous, data loading and the final evaluation excluded).
// JSON lines: {"bench":"train","model","workers","samples_per_s","speedup_vs_1_worker",
//   "step_ms","compute_ms","exposed_comm_ms","hook_ms","optimizer_ms","data_ms","steps","repeats"}
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "worker/comm/http_store_server.h"
#include "worker/runtime/launch_env.h"
#include "worker/runtime/process_supervisor.h"

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

std::string jobYaml(const std::string& model, int steps) {
  std::string m = model == "cnn" ? "  model: {type: cnn, convChannels: [8, 16], kernelSize: 3, hidden: [128]}\n"
                                 : "  model: {type: mlp, hidden: [256, 256]}\n";
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: bench-" + model + "}\nspec:\n" + m +
         "  threadsPerWorker: 1\n"
         "  data: {dataset: fashion-mnist, batchSize: 64, limit: 16384}\n"
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
  for (int i = 1; i < argc; ++i) {
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
    else {
      std::fprintf(stderr, "usage: bench_train [--json] [--models mlp,cnn] [--workers 1,2,4] [--repeats N] "
                           "[--mlp-steps N] [--cnn-steps N] [--worker-bin PATH]\n");
      return 2;
    }
  }
  if (o.workerBin.empty()) o.workerBin = selfDir() + "/ddp-worker";
  if (::access(o.workerBin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_train: no worker program at %s (build ddp-worker)\n", o.workerBin.c_str());
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("bench_train_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::map<std::string, std::string> jobs;
  for (const auto& m : o.models) {
    jobs[m] = dir + "/" + m + ".yaml";
    std::ofstream(jobs[m]) << jobYaml(m, m == "cnn" ? o.cnnSteps : o.mlpSteps);
  }
  // Round-robin: repeat r of every configuration before repeat r + 1 of any.
  std::map<std::pair<std::string, int>, std::vector<Sample>> results;
  for (int r = 0; r < o.repeats; ++r) {
    for (const auto& m : o.models) {
      for (int w : o.workers) {
        Sample s = runOnce(o, jobs[m], w);
        if (!s.ok) std::fprintf(stderr, "bench_train: %s with %d workers failed\n", m.c_str(), w);
        results[{m, w}].push_back(s);
      }
    }
  }
  std::filesystem::remove_all(dir);
  if (!o.json) {
    std::printf("%-5s %7s %12s %8s %9s %10s %13s %8s %11s\n", "model", "workers", "samples/s", "speedup", "step ms",
                "compute ms", "exp. comm ms", "hook ms", "optim ms");
  }
  int rc = 0;
  for (const auto& m : o.models) {
    double base = 0;
    for (int w : o.workers) {
      auto v = results[{m, w}];
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
                    "\"hook_ms\":%.3f,\"optimizer_ms\":%.3f,\"data_ms\":%.3f,\"steps\":%lld,\"repeats\":%zu}\n",
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
  return rc;
}
