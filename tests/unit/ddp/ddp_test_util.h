#pragma once
// Shared helpers of the reducer tests: the single-process oracle and gradient comparison.
// Thread model: plain functions.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/local_backend.h"
#include "tests/unit/ddp/linear_stack.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/reducer.h"

namespace ddp::testing {

inline constexpr int kRowsPerRank = 5;

inline const std::vector<LayerSpec>& mixedLayers() {
  static const std::vector<LayerSpec> layers = {
      {8, 16, DType::kF32}, {5, 3, DType::kF64}, {8, 4, DType::kF32}, {3, 1, DType::kF32}, {7, 2, DType::kF64}};
  return layers;
}

// Gradients of a single process on rows [row0, row0 + rows) of `step`'s batch (sum over `steps`
// list: gradient accumulation), from rank 0's initial parameters.
inline std::vector<std::vector<double>> oracleGrads(const std::vector<LayerSpec>& layers,
                                                    const std::vector<uint64_t>& steps, int row0, int rows,
                                                    const std::vector<int>& skip = {}) {
  LinearStack ref(layers, /*initSeed=*/1);
  for (uint64_t s : steps) ref.backward(s, row0, rows, {}, skip);
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < ref.parameters().size(); ++i) out.push_back(ref.grad(i));
  return out;
}

// |got - want| <= tol * max(1, max|want|) for every element of every parameter.
inline void expectGradsNear(LinearStack& model, const std::vector<std::vector<double>>& want, double tol,
                            const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    const auto got = model.grad(i);
    double scale = 1.0;
    for (double w : want[i]) scale = std::max(scale, std::fabs(w));
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_NEAR(got[j], want[i][j], tol * scale) << what << ": param " << i << " elem " << j;
    }
  }
}

// Hooks by name; "none" means the reducer's default path.
inline std::unique_ptr<CommHook> hookByName(const std::string& name, comm::Backend& backend) {
  if (name == "allreduce") return makeAllreduceHook(backend);
  if (name == "fp16") return makeFp16CompressHook(backend);
  if (name == "bf16") return makeBf16CompressHook(backend);
  if (name == "fp16_wrapper") return makeFp16Wrapper(makeAllreduceHook(backend));
  if (name == "bf16_wrapper") return makeBf16Wrapper(makeAllreduceHook(backend));
  if (name == "noop") return makeNoopHook();
  return nullptr;
}

inline double toleranceFor(const std::string& hook) {
  if (hook == "bf16" || hook == "bf16_wrapper") return 2e-2;
  if (hook == "fp16" || hook == "fp16_wrapper") return 2e-3;
  return 1e-5;
}

inline comm::LocalGroupOptions fastGroup() {
  comm::LocalGroupOptions o;
  o.timeout = std::chrono::seconds(20);
  return o;
}

inline Deadline stepDeadline() { return Deadline::after(std::chrono::seconds(20)); }

// Single-process gradients on the whole global batch of `steps` (every rank's rows, summed over
// `steps`): what DDP must produce when all ranks use every layer.
inline std::vector<std::vector<double>> globalOracleGrads(int world, const std::vector<uint64_t>& steps) {
  return oracleGrads(mixedLayers(), steps, 0, world * kRowsPerRank);
}

// Backward of `rank`'s share of `step`'s global batch (rows [rank * kRowsPerRank, +kRowsPerRank)).
inline void rankBackward(LinearStack& model, int rank, uint64_t step, const GradReadyFn& ready,
                         const std::vector<int>& skip = {}) {
  model.backward(step, rank * kRowsPerRank, kRowsPerRank, ready, skip);
}

// A Reducer over model's parameters with hookByName(hook) registered ("none": the default path).
inline Result<std::unique_ptr<Reducer>> makeReducer(comm::Backend& backend, LinearStack& model,
                                                    const ReducerOptions& options = {},
                                                    const std::string& hook = "none") {
  DDP_ASSIGN_OR_RETURN(auto reducer, Reducer::create(backend, model.parameters(), options));
  if (auto h = hookByName(hook, backend)) DDP_RETURN_IF_ERROR(reducer->registerCommHook(std::move(h)));
  return reducer;
}

}  // namespace ddp::testing

namespace ddp::testing {

// Average over ranks of each rank's local gradients: what DDP must produce when ranks differ in
// which layers they use. localSteps(r) lists rank r's (step, skipped layers) micro-steps.
struct MicroStep {
  uint64_t step;
  std::vector<int> skip;
};
inline std::vector<std::vector<double>> averagedLocalGrads(const std::vector<LayerSpec>& layers, int world,
                                                           const std::function<std::vector<MicroStep>(int)>& localSteps) {
  std::vector<std::vector<double>> sum;
  for (int r = 0; r < world; ++r) {
    LinearStack ref(layers, 1);
    for (const auto& m : localSteps(r)) ref.backward(m.step, r * kRowsPerRank, kRowsPerRank, {}, m.skip);
    for (size_t i = 0; i < ref.parameters().size(); ++i) {
      auto g = ref.grad(i);
      if (sum.size() <= i) sum.emplace_back(g.size(), 0.0);
      for (size_t j = 0; j < g.size(); ++j) sum[i][j] += g[j] / world;
    }
  }
  return sum;
}

}  // namespace ddp::testing
