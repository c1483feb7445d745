// bench_ddp_step: one DDP training step (zero grad, forward, backward with bucketed reduction
// overlapping it, finalize, SGD update) of the MLP 1024 -> 2048 x4 -> 10 (about 14.7M
// parameters), batch 64 per rank, synthetic data, for each comm hook over 2 processes on Gloo
// (TCP loopback), against the same model in 1 process without DDP.
//
//   build/bin/bench_ddp_step [--json] [--steps 30] [--warmup 5] [--batch 64] [--world 2]
//                            [--repeat 3] [--no-view] [--hooks none,allreduce,fp16,bf16,powersgd_r1,powersgd_r4,batched_powersgd_r4]
//
// Each configuration runs in fresh processes (this binary re-executed with --worker), each
// with one compute thread (openblas_set_num_threads(1)); they meet through a file store in a
// temporary directory. The hooks run round-robin --repeat times (this machine's load drifts; each
// round measures every hook) and each figure is the median over rounds. Reported per hook:
//  - ms_per_step: median over the measured steps (the slowest rank's median);
//  - hook_ms: CPU ms per step of the comm thread inside CommHook::run + finish (the hook's
//    computation); hook_wall_ms adds the time multi-stage hooks wait on their collectives;
//  - bytes_per_step: payload bytes this rank handed to collectives per step;
//  - compression_ratio: f32 gradient bytes / bytes_per_step;
//  - cpu_ms_per_step: CPU time of all the process's threads per step (compute plus
//    communication, the slowest rank; less sensitive to the machine's load than wall time);
//  - finalize_ms: median time blocked in Reducer::finalize after backward (exposed communication).
// Gradients live in the buckets (gradientAsBucketView) unless --no-view.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/mlp_bench.h"
#include "bench/common/process.h"
#include "bench/common/rank_processes.h"
#include "bench/common/temp_dir.h"
#include "worker/comm/gloo_backend.h"
#include "common/store/store.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/powersgd_hook.h"
#include "worker/ddp/reducer.h"

namespace ddp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- FileStore: a cross-process comm::Store over files in one directory (rendezvous only). ----
class FileStore final : public comm::Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  Status set(const std::string& key, const std::string& value) override {
    const std::string tmp = path(key) + ".tmp" + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(value.data(), static_cast<std::streamsize>(value.size()));
      if (!out) return unavailable("FileStore: cannot write " + tmp);
    }
    std::error_code ec;
    fs::rename(tmp, path(key), ec);
    return ec ? unavailable("FileStore: rename: " + ec.message()) : Status::ok();
  }
  Result<std::string> get(const std::string& key, Deadline deadline) override {
    DDP_RETURN_IF_ERROR(wait({key}, deadline));
    return read(key);
  }
  Result<int64_t> add(const std::string& key, int64_t delta) override {
    Locked lock(dir_);
    int64_t v = 0;
    if (fs::exists(path(key))) v = std::stoll(read(key));
    v += delta;
    DDP_RETURN_IF_ERROR(set(key, std::to_string(v)));
    return v;
  }
  Result<std::string> compareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) override {
    Locked lock(dir_);
    const bool exists = fs::exists(path(key));
    std::string cur = exists ? read(key) : std::string();
    if ((!exists && expected.empty()) || (exists && cur == expected)) {
      DDP_RETURN_IF_ERROR(set(key, desired));
      return desired;
    }
    return cur;
  }
  Result<bool> check(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) {
      if (!fs::exists(path(k))) return false;
    }
    return true;
  }
  Result<bool> deleteKey(const std::string& key) override { return fs::remove(path(key)); }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    for (;;) {
      if (*check(keys)) return Status::ok();
      if (deadline.expired()) return timeoutError("FileStore: keys not set by the deadline (first: " + keys[0] + ")");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  struct Locked {
    int fd;
    explicit Locked(const std::string& dir) : fd(::open((dir + "/.lock").c_str(), O_CREAT | O_RDWR, 0600)) {
      if (fd >= 0) (void)flock(fd, LOCK_EX);
    }
    ~Locked() {
      if (fd >= 0) ::close(fd);
    }
  };
  std::string path(const std::string& key) const {
    std::string name;
    for (unsigned char c : key) {
      if (std::isalnum(c) || c == '_' || c == '-') name += static_cast<char>(c);
      else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02x", c);
        name += buf;
      }
    }
    return dir_ + "/" + name;
  }
  std::string read(const std::string& key) const {
    std::ifstream in(path(key), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string dir_;
};

// ---- CountingBackend: forwards everything, counts payload bytes handed to collectives. ----
class CountingBackend final : public comm::Backend {
 public:
  explicit CountingBackend(comm::Backend& inner) : inner_(inner) {}
  uint64_t bytes() const { return bytes_.load(); }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  bool supportsDevice(DeviceType t) const override { return inner_.supportsDevice(t); }
  comm::WorkPtr allreduce(comm::BufferView b, comm::ReduceOp op, const comm::OpOptions& o) override {
    bytes_ += b.bytes();
    return inner_.allreduce(b, op, o);
  }
  comm::WorkPtr broadcast(comm::BufferView b, int root, const comm::OpOptions& o) override {
    bytes_ += b.bytes();
    return inner_.broadcast(b, root, o);
  }
  comm::WorkPtr allgather(comm::BufferView in, comm::BufferView out, const comm::OpOptions& o) override {
    bytes_ += in.bytes();
    return inner_.allgather(in, out, o);
  }
  comm::WorkPtr reduceScatter(comm::BufferView in, comm::BufferView out, comm::ReduceOp op,
                              const comm::OpOptions& o) override {
    bytes_ += in.bytes();
    return inner_.reduceScatter(in, out, op, o);
  }
  comm::WorkPtr gather(comm::BufferView in, comm::BufferView out, int root, const comm::OpOptions& o) override {
    bytes_ += in.bytes();
    return inner_.gather(in, out, root, o);
  }
  comm::WorkPtr barrier(const comm::OpOptions& o) override { return inner_.barrier(o); }
  comm::WorkPtr send(comm::BufferView b, int dst, int tag, const comm::OpOptions& o) override {
    bytes_ += b.bytes();
    return inner_.send(b, dst, tag, o);
  }
  comm::WorkPtr recv(comm::BufferView b, int src, int tag, const comm::OpOptions& o) override {
    return inner_.recv(b, src, tag, o);
  }
  Status startCoalescing() override { return inner_.startCoalescing(); }
  comm::WorkPtr endCoalescing() override { return inner_.endCoalescing(); }
  void abort(const Status& reason) override { inner_.abort(reason); }
  bool isAborted() const override { return inner_.isAborted(); }
  Duration defaultTimeout() const override { return inner_.defaultTimeout(); }

 private:
  comm::Backend& inner_;
  std::atomic<uint64_t> bytes_{0};
};

struct Args {
  bool json = false;
  int steps = 30;
  int warmup = 5;
  int batch = 64;
  int world = 2;
  bool view = true;  // ReducerOptions::gradientAsBucketView (no pack/unpack copies)
  int repeat = 3;    // rounds over all hooks (round-robin, so load drifts hit every hook alike)
  std::vector<std::string> hooks = {"none", "allreduce", "fp16", "bf16", "powersgd_r1", "powersgd_r4",
                                    "batched_powersgd_r4"};
  // Worker mode.
  bool worker = false;
  int rank = 0;
  std::string dir;
  std::string hook;
};

Result<std::unique_ptr<CommHook>> makeHook(const std::string& name, comm::Backend& backend) {
  if (name == "allreduce") return makeAllreduceHook(backend);
  if (name == "fp16") return makeFp16CompressHook(backend);
  if (name == "bf16") return makeBf16CompressHook(backend);
  PowerSgdOptions o;
  o.startPowerSgdIter = 2;  // compress from the second step (after the bucket rebuild)
  if (name == "powersgd_r1" || name == "powersgd_r4") {
    o.matrixApproximationRank = name == "powersgd_r1" ? 1 : 4;
    DDP_ASSIGN_OR_RETURN(auto h, PowerSgdHook::create(backend, o));
    return std::unique_ptr<CommHook>(std::move(h));
  }
  if (name == "batched_powersgd_r4") {
    o.matrixApproximationRank = 4;
    DDP_ASSIGN_OR_RETURN(auto h, BatchedPowerSgdHook::create(backend, o));
    return std::unique_ptr<CommHook>(std::move(h));
  }
  return invalidArgument("unknown hook '" + name + "'");
}

double processCpuMs() { return processCpuSeconds() * 1e3; }

// One process of one configuration; writes "<ms_per_step> <hook_ms> <bytes_per_step> <grad_bytes>
// <cpu_ms> <hook_wall_ms>" to dir/result_<rank>.
Status runWorker(const Args& a) {
  const bool ddp = a.hook != "none";
  DDP_ASSIGN_OR_RETURN(auto model, buildBenchMlp(a.batch));
  const SyntheticBatches data(a.rank, a.batch);  // cycled

  std::unique_ptr<comm::GlooBackend> gloo;
  std::unique_ptr<CountingBackend> counting;
  std::unique_ptr<Reducer> reducer;
  if (ddp) {
    FileStore store(a.dir + "/store");
    comm::GlooOptions go;
    go.rank = a.rank;
    go.size = a.world;
    go.prefix = "bench/" + a.hook;
    go.timeout = std::chrono::seconds(120);
    DDP_ASSIGN_OR_RETURN(gloo, comm::GlooBackend::create(go, store));
    counting = std::make_unique<CountingBackend>(*gloo);
    ReducerOptions ro;
    ro.gradientAsBucketView = a.view;
    DDP_ASSIGN_OR_RETURN(reducer, Reducer::create(*counting, model->parameters(), ro));
    DDP_ASSIGN_OR_RETURN(auto hook, makeHook(a.hook, *counting));
    DDP_RETURN_IF_ERROR(reducer->registerCommHook(std::move(hook)));
  }
  uint64_t gradBytes = 0;
  for (Parameter* p : model->parameters()) gradBytes += p->numel() * sizeof(float);

  std::vector<double> stepMs, finalizeMs;
  double hookStart = 0, hookCpuStart = 0;
  uint64_t bytesStart = 0;
  double cpuStart = 0;
  const float lr = 1e-3f;
  for (int step = 0; step < a.warmup + a.steps; ++step) {
    if (step == a.warmup) cpuStart = processCpuMs();
    if (step == a.warmup && ddp) {
      hookStart = reducer->stats().hookSeconds;
      hookCpuStart = reducer->stats().hookCpuSeconds;
      bytesStart = counting->bytes();
    }
    const int b = step % kSyntheticBatches;
    const auto t0 = Clock::now();
    model->zeroGrad();
    DDP_ASSIGN_OR_RETURN(auto stats,
                         model->forwardBackward(data.images(b), data.labels(b), a.batch,
                                                ddp ? reducer->gradReadyFn() : GradReadyFn{}));
    (void)stats;
    if (ddp) {
      const auto f0 = Clock::now();
      DDP_RETURN_IF_ERROR(reducer->finalize(Deadline::after(std::chrono::seconds(120))));
      if (step >= a.warmup) finalizeMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - f0).count());
    }
    for (Parameter* p : model->parameters()) {
      float* w = static_cast<float*>(p->data);
      const float* g = static_cast<const float*>(p->grad);
      const size_t n = p->numel();
      for (size_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (step >= a.warmup) stepMs.push_back(ms);
  }
  const double cpuMs = (processCpuMs() - cpuStart) / a.steps;
  const double hookMs = ddp ? (reducer->stats().hookCpuSeconds - hookCpuStart) * 1e3 / a.steps : 0.0;
  const double hookWallMs = ddp ? (reducer->stats().hookSeconds - hookStart) * 1e3 / a.steps : 0.0;
  const double bytesPerStep = ddp ? static_cast<double>(counting->bytes() - bytesStart) / a.steps : 0.0;
  reducer.reset();
  std::ofstream out(a.dir + "/result_" + std::to_string(a.rank));
  out << median(stepMs) << " " << hookMs << " " << bytesPerStep << " " << gradBytes << " " << cpuMs << " " << hookWallMs << " " << median(finalizeMs) << "\n";
  return out ? Status::ok() : unavailable("cannot write the result file");
}

struct Result1 {
  double msPerStep = 0, hookMs = 0, bytesPerStep = 0, gradBytes = 0;
  double cpuMs = 0;  // CPU time (all threads of the process) per step
  double hookWallMs = 0;
  double finalizeMs = 0;  // median time blocked in finalize() after backward (exposed communication)
};

// Spawns the configuration's processes and collects their results.
Result<Result1> runConfig(const Args& a, const std::string& hook) {
  const int world = hook == "none" ? 1 : a.world;
  DDP_ASSIGN_OR_RETURN(const TempDir tempDir, TempDir::make("bench_ddp_step"));
  const std::string& dir = tempDir.path();
  fs::create_directories(dir + "/store");
  auto argvFor = [&](int r) {
    std::vector<std::string> argv = {"/proc/self/exe", "--worker", "--rank", std::to_string(r), "--world",
                                     std::to_string(world), "--hook", hook, "--dir", dir, "--steps",
                                     std::to_string(a.steps), "--warmup", std::to_string(a.warmup), "--batch",
                                     std::to_string(a.batch)};
    if (!a.view) argv.push_back("--no-view");
    return argv;
  };
  // Each rank's line: ms_per_step hook_ms bytes_per_step grad_bytes cpu_ms hook_wall_ms finalize_ms.
  auto rows = runRankProcesses(world, argvFor, dir, 7);
  if (!rows.isOk() && rows.status().code() == StatusCode::kUnavailable) return rows.status();
  if (!rows.isOk()) return internalError("configuration '" + hook + "' failed (see the workers' messages above)");
  Result1 res;
  for (const auto& one : *rows) {
    res.finalizeMs = std::max(res.finalizeMs, one[6]);
    res.hookWallMs = std::max(res.hookWallMs, one[5]);
    res.cpuMs = std::max(res.cpuMs, one[4]);
    res.msPerStep = std::max(res.msPerStep, one[0]);  // the slowest rank sets the pace
    res.hookMs = std::max(res.hookMs, one[1]);
    res.bytesPerStep = std::max(res.bytesPerStep, one[2]);
    res.gradBytes = one[3];
  }
  return res;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (s == "--json") a.json = true;
    else if (s == "--steps") a.steps = std::stoi(next());
    else if (s == "--warmup") a.warmup = std::stoi(next());
    else if (s == "--batch") a.batch = std::stoi(next());
    else if (s == "--world") a.world = std::stoi(next());
    else if (s == "--worker") a.worker = true;
    else if (s == "--no-view") a.view = false;
    else if (s == "--repeat") a.repeat = std::stoi(next());
    else if (s == "--rank") a.rank = std::stoi(next());
    else if (s == "--dir") a.dir = next();
    else if (s == "--hook") a.hook = next();
    else if (s == "--hooks") {
      a.hooks.clear();
      std::stringstream ss(next());
      for (std::string h; std::getline(ss, h, ',');) a.hooks.push_back(h);
    } else {
      std::cerr << "unknown flag " << s << "\n";
      std::exit(2);
    }
  }
  return a;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using namespace ddp::bench;
  Args a = parse(argc, argv);
  if (a.worker) {
    ddp::Status st = runWorker(a);
    if (!st.isOk()) {
      std::cerr << "bench_ddp_step worker rank " << a.rank << " hook " << a.hook << ": " << st << "\n";
      return 1;
    }
    return 0;
  }
  double baseline = 0, allreduceBytes = 0;
  int failures = 0;
  if (!a.json) {
    std::printf("%-22s %5s %12s %10s %10s %16s %12s %12s %12s\n", "hook", "world", "ms_per_step", "vs_single",
                "hook_ms", "bytes_per_step", "compression", "cpu_ms/step", "finalize_ms");
  }
  std::map<std::string, std::vector<Result1>> rounds;
  for (int round = 0; round < a.repeat; ++round) {
    for (const auto& hook : a.hooks) {
      auto r = runConfig(a, hook);
      if (!r.isOk()) {
        std::cerr << r.status() << "\n";
        ++failures;
        continue;
      }
      rounds[hook].push_back(*r);
    }
  }
  auto med = [](const std::vector<Result1>& v, double Result1::*field) {
    std::vector<double> x;
    for (const auto& r : v) x.push_back(r.*field);
    return median(x);
  };
  for (const auto& hook : a.hooks) {
    if (rounds[hook].empty()) continue;
    Result1 r{med(rounds[hook], &Result1::msPerStep), med(rounds[hook], &Result1::hookMs),
              med(rounds[hook], &Result1::bytesPerStep), rounds[hook][0].gradBytes,
              med(rounds[hook], &Result1::cpuMs), med(rounds[hook], &Result1::hookWallMs),
              med(rounds[hook], &Result1::finalizeMs)};
    if (hook == "none") baseline = r.msPerStep;
    if (hook == "allreduce") allreduceBytes = r.bytesPerStep;
    const int world = hook == "none" ? 1 : a.world;
    const double ratio = r.bytesPerStep > 0 ? r.gradBytes / r.bytesPerStep : 1.0;
    const double vsSingle = baseline > 0 ? r.msPerStep / baseline : 0.0;
    if (a.json) {
      std::printf(
          "{\"bench\":\"ddp_step\",\"hook\":\"%s\",\"world\":%d,\"batch_per_rank\":%d,\"steps\":%d,"
          "\"ms_per_step\":%.3f,\"hook_ms\":%.3f,\"bytes_per_step\":%.0f,\"compression_ratio\":%.2f,"
          "\"vs_single_process\":%.3f,\"bytes_vs_allreduce\":%.5f,\"grad_as_bucket_view\":%s,\"rounds\":%zu,"
          "\"cpu_ms_per_step\":%.3f,\"hook_wall_ms\":%.3f,\"finalize_ms\":%.3f}\n",
          hook.c_str(), world, a.batch, a.steps, r.msPerStep, r.hookMs, r.bytesPerStep, ratio, vsSingle,
          allreduceBytes > 0 ? r.bytesPerStep / allreduceBytes : 0.0, a.view ? "true" : "false",
          rounds[hook].size(), r.cpuMs, r.hookWallMs, r.finalizeMs);
    } else {
      std::printf("%-22s %5d %12.2f %10.3f %10.2f %16.0f %12.2f %12.2f %12.2f\n", hook.c_str(), world, r.msPerStep,
                  vsSingle, r.hookMs, r.bytesPerStep, ratio, r.cpuMs, r.finalizeMs);
    }
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}
