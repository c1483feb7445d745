// bench_powersgd: the CPU cost of the PowerSGD hooks' own work (kernels, packing, state) per
// training step, on the gradients of the DDP benchmark model (MLP 1024 -> 2048 x4 -> 10,
// 14.7M parameters, buckets as the Reducer cuts them: 1 MiB first, 25 MiB after, reverse
// order), against the same model's single-process forward + backward step (batch 64) measured
// in the same run on the same thread. World size 1 over a loopback backend whose collectives
// complete at once, so the figure is compute only (what a rank's comm thread spends besides
// waiting for the network).
//
//   build/bin/bench_powersgd [--steps 10] [--warmup 3] [--batch 64] [--hooks allreduce,powersgd_r1,powersgd_r4,batched_powersgd_r4]
//                            [--no-model]
//
// --no-model skips the model step (no vs_single_step field): for profiling the hooks alone,
// e.g. valgrind --tool=callgrind --toggle-collect='ddp::PowerSgdHook::*' bench_powersgd --no-model
// --steps 2 --warmup 1 --hooks powersgd_r4 (the hooks run on the benchmark's own bucket buffers
// either way; only the gradient shapes matter to their cost).
//
// One JSON line per hook: hook, ms_per_step (median over steps), min_ms, vs_single_step
// (ms_per_step / the model step's median), compression_ratio.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/json_line.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/powersgd_hook.h"
#include "worker/model/mlp.h"

namespace ddp::bench {
namespace {

// World size 1: every collective is complete on return (the result is the input).
class LoopbackBackend final : public comm::Backend {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "loopback"; }
  bool supportsDevice(DeviceType t) const override { return t == DeviceType::kCpu; }
  comm::WorkPtr allreduce(comm::BufferView b, comm::ReduceOp, const comm::OpOptions&) override { return done(b); }
  comm::WorkPtr broadcast(comm::BufferView b, int, const comm::OpOptions&) override { return done(b); }
  comm::WorkPtr allgather(comm::BufferView, comm::BufferView, const comm::OpOptions&) override { return no(); }
  comm::WorkPtr reduceScatter(comm::BufferView, comm::BufferView, comm::ReduceOp, const comm::OpOptions&) override {
    return no();
  }
  comm::WorkPtr gather(comm::BufferView, comm::BufferView, int, const comm::OpOptions&) override { return no(); }
  comm::WorkPtr barrier(const comm::OpOptions&) override { return done({}); }
  comm::WorkPtr send(comm::BufferView, int, int, const comm::OpOptions&) override { return no(); }
  comm::WorkPtr recv(comm::BufferView, int, int, const comm::OpOptions&) override { return no(); }
  Status startCoalescing() override { return unimplemented("loopback: no coalescing"); }
  comm::WorkPtr endCoalescing() override { return no(); }
  void abort(const Status&) override {}
  bool isAborted() const override { return false; }
  Duration defaultTimeout() const override { return comm::kDefaultOpTimeout; }

 private:
  comm::WorkPtr done(comm::BufferView b) {
    return comm::completedWork(Status::ok(), comm::OpType::kAllreduce, ++seq_, b.bytes());
  }
  comm::WorkPtr no() { return comm::completedWork(unimplemented("loopback: op not supported")); }
  uint64_t seq_ = 0;
};

struct Bucket {
  std::vector<float> buffer;
  std::vector<Parameter*> params;
  std::vector<size_t> offsets;
  uint64_t identity = 0;
};

// Reverse registration order, closed at 1 MiB for the first bucket and 25 MiB after.
std::vector<Bucket> cutBuckets(const std::vector<Parameter*>& params) {
  std::vector<Bucket> out(1);
  size_t cap = 1 << 20;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    Bucket& b = out.back();
    b.offsets.push_back(b.buffer.size());
    b.params.push_back(*it);
    b.buffer.resize(b.buffer.size() + (*it)->numel());
    b.identity = b.identity * 1000003u + stableHash((*it)->name);
    if (b.buffer.size() * sizeof(float) >= cap && std::next(it) != params.rend()) {
      out.emplace_back();
      cap = 25 << 20;
    }
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::unique_ptr<CommHook> makeHook(const std::string& name, comm::Backend& backend) {
  PowerSgdOptions o;
  o.startPowerSgdIter = 2;
  if (name == "allreduce") return makeAllreduceHook(backend);
  if (name == "powersgd_r1" || name == "powersgd_r4") {
    o.matrixApproximationRank = name == "powersgd_r1" ? 1 : 4;
    return std::make_unique<PowerSgdHook>(backend, o);
  }
  if (name == "batched_powersgd_r4") {
    o.matrixApproximationRank = 4;
    return std::make_unique<BatchedPowerSgdHook>(backend, o);
  }
  return nullptr;
}

int run(int argc, char** argv) {
  int steps = 10, warmup = 3, batch = 64;
  bool runModel = true;
  std::vector<std::string> hooks = {"allreduce", "powersgd_r1", "powersgd_r4", "batched_powersgd_r4"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--steps") steps = std::stoi(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--batch") batch = std::stoi(next());
    else if (a == "--no-model") runModel = false;
    else if (a == "--hooks") {
      hooks.clear();
      std::stringstream ss(next());
      for (std::string h; std::getline(ss, h, ',');) hooks.push_back(h);
    } else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  openblas_set_num_threads(1);
  model::MlpConfig config;
  config.inputs = 1024;
  config.hidden = {2048, 2048, 2048, 2048};
  config.classes = 10;
  model::ModelOptions mo;
  mo.cpuThreads = 1;
  auto net = model::buildMlp(config, mo);
  if (!net.isOk()) {
    std::cerr << net.status() << "\n";
    return 1;
  }
  auto& m = **net;
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(batch) * config.inputs);
  for (auto& v : x) v = normal(gen);
  std::vector<int32_t> y(batch);
  for (auto& v : y) v = static_cast<int32_t>(gen() % config.classes);
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };

  std::vector<double> modelMs;
  for (int s = 0; runModel && s < warmup + steps; ++s) {
    m.zeroGrad();
    auto t0 = Clock::now();
    auto r = m.forwardBackward(x.data(), y.data(), batch);
    auto t1 = Clock::now();
    if (!r.isOk()) {
      std::cerr << r.status() << "\n";
      return 1;
    }
    if (s >= warmup) modelMs.push_back(ms(t0, t1));
  }
  const double modelStep = median(modelMs);
  if (runModel) JsonLine().add("bench", "powersgd_hook").add("hook", "model_step").add("params", static_cast<int64_t>(m.numParameters()))
      .add("batch", batch).add("ms_per_step", modelStep).print();

  auto buckets = cutBuckets(m.parameters());
  for (const auto& name : hooks) {
    LoopbackBackend backend;
    auto hook = makeHook(name, backend);
    if (!hook) {
      std::cerr << "unknown hook " << name << "\n";
      return 2;
    }
    std::vector<double> stepMs;
    for (int s = 0; s < warmup + steps; ++s) {
      for (auto& b : buckets)  // fresh gradients each step (outside the timing)
        for (size_t i = 0; i < b.buffer.size(); i += 97) b.buffer[i] = normal(gen);
      auto t0 = Clock::now();
      for (size_t k = 0; k < buckets.size(); ++k) {
        Bucket& b = buckets[k];
        std::vector<comm::BufferView> views;
        for (size_t i = 0; i < b.params.size(); ++i) views.push_back(comm::viewOf(b.buffer.data() + b.offsets[i], b.params[i]->numel()));
        GradBucket gb(k, k + 1 == buckets.size(), comm::viewOf(b.buffer.data(), b.buffer.size()), views, b.params, b.identity);
        auto r = hook->run(gb);
        Status st = r.status();
        if (st.isOk() && r->work) st = r->work->wait();
        if (st.isOk() && r->finish) st = r->finish();
        if (!st.isOk()) {
          std::cerr << name << ": " << st << "\n";
          return 1;
        }
      }
      auto t1 = Clock::now();
      if (s >= warmup) stepMs.push_back(ms(t0, t1));
    }
    double ratio = 1.0;
    if (auto* p = dynamic_cast<PowerSgdHookBase*>(hook.get())) ratio = p->compressionStats().compressionRatio();
    const double med = median(stepMs);
    JsonLine line;
    line.add("bench", "powersgd_hook").add("hook", name).add("ms_per_step", med)
        .add("min_ms", *std::min_element(stepMs.begin(), stepMs.end())).add("compression_ratio", ratio).add("buckets", static_cast<int64_t>(buckets.size()));
    if (runModel) line.add("vs_single_step", med / modelStep);
    line.print();
  }
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) { return ddp::bench::run(argc, argv); }
