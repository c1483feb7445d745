// The device side of Optimizer as seen from the CPU (runs in every build): which parameter
// devices makeOptimizer accepts, hostState()/hostStateDict() being the CPU state itself on the
// CPU (so CPU and CUDA checkpoints share one format), zeroGrad, a failed load keeping the state,
// and the gradient norm / clip coefficient against closed forms. CUDA steps are checked against
// the CPU twin in optimizer_cuda_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/support/float_params.h"
#include "worker/comm/nccl_backend.h"
#include "worker/optim/grad_norm.h"
#include "worker/optim/optimizer.h"

namespace ddp::optim {
namespace {

const std::vector<size_t> kSizes = {5, 1, 12};

struct Params : test::FloatParams {
  Params() : FloatParams(kSizes, [](size_t i, size_t k) { return std::cos(0.4f * (i + 1) + 0.23f * k); }) {}
  void setGrads(int step) {
    for (size_t i = 0; i < grad.size(); ++i) {
      for (size_t k = 0; k < grad[i].size(); ++k) grad[i][k] = std::sin(0.7f * (i + 1) + 0.31f * k + step);
    }
  }
};

TEST(OptimizerDeviceTest, CudaParametersNeedACudaBuildAndOneDevice) {
  Params m;
  std::vector<Parameter*> ps = m.ptrs();
  ps[1]->device = Device::cuda(0);  // never dereferenced: refused before any step
  auto mixed = makeOptimizer(OptimizerConfig::adam(), ps);
  ASSERT_FALSE(mixed.isOk());
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("one device"), std::string::npos) << mixed.status();

  for (Parameter* p : ps) p->device = Device::cuda(0);
  auto cuda = makeOptimizer(OptimizerConfig::sgd(0.1f, 0.9f), ps);
  if (comm::ncclBackendAvailable()) {
    // Accepted; the state is allocated on the first step (not taken here: no GPU needed).
    ASSERT_TRUE(cuda.isOk()) << cuda.status();
    EXPECT_EQ((*cuda)->device(), Device::cuda(0));
    EXPECT_EQ((*cuda)->stateBytes(), 0u);
  } else {
    ASSERT_FALSE(cuda.isOk());
    EXPECT_EQ(cuda.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(cuda.status().message().find("this build has no CUDA"), std::string::npos) << cuda.status();
  }
}

TEST(OptimizerDeviceTest, HostStateIsTheCpuStateInTheSameFormat) {
  for (const OptimizerConfig& config :
       {OptimizerConfig::sgd(0.1f, 0.9f, 0.f, 1e-3f, true), OptimizerConfig::adam(0.01f), OptimizerConfig::adamw(0.01f)}) {
    SCOPED_TRACE(optimizerKindName(config.kind));
    Params m;
    auto opt = makeOptimizer(config, m.ptrs());
    ASSERT_TRUE(opt.isOk()) << opt.status();
    EXPECT_EQ((*opt)->device(), Device::cpu());
    for (int s = 0; s < 3; ++s) {
      m.setGrads(s);
      ASSERT_TRUE((*opt)->step().isOk());
    }
    auto dict = (*opt)->hostStateDict();
    ASSERT_TRUE(dict.isOk()) << dict.status();
    EXPECT_EQ(*dict, (*opt)->stateDict());  // byte for byte
    for (size_t i = 0; i < kSizes.size(); ++i) {
      auto s = (*opt)->hostParamState(i);
      ASSERT_TRUE(s.isOk());
      EXPECT_EQ(*s, (*opt)->state(i));
      EXPECT_EQ(s->step, 3);
    }
    // Round trip into a fresh optimizer: identical state and identical next step.
    Params m2;
    auto opt2 = makeOptimizer(config, m2.ptrs());
    ASSERT_TRUE(opt2.isOk());
    ASSERT_TRUE((*opt2)->loadStateDict(*dict).isOk());
    for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ((*opt2)->state(i), (*opt)->state(i));
    for (size_t i = 0; i < kSizes.size(); ++i) std::copy(m.data[i].begin(), m.data[i].end(), m2.data[i].begin());
    m.setGrads(9);
    m2.setGrads(9);
    ASSERT_TRUE((*opt)->step().isOk());
    ASSERT_TRUE((*opt2)->step().isOk());
    EXPECT_EQ(m2.data, m.data);
  }
}

TEST(OptimizerDeviceTest, FailedLoadKeepsTheState) {
  Params m;
  auto opt = makeOptimizer(OptimizerConfig::adam(0.01f), m.ptrs());
  ASSERT_TRUE(opt.isOk());
  m.setGrads(0);
  ASSERT_TRUE((*opt)->step().isOk());
  OptimizerState bad = (*opt)->exportState();
  const std::string before = (*opt)->stateDict();
  bad.params[2].state.slots[1].pop_back();  // one record short of its parameter
  bad.params[2].numel = bad.params[2].state.slots[1].size();
  EXPECT_EQ((*opt)->importState(bad).code(), StatusCode::kInvalidArgument);
  bad = (*opt)->exportState();
  bad.params[1].state.slots.pop_back();  // one slot missing
  bad.config.lr = 0.5f;
  EXPECT_EQ((*opt)->importState(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*opt)->stateDict(), before);
  EXPECT_EQ((*opt)->lr(), 0.01f);
}

TEST(OptimizerDeviceTest, ZeroGradClearsEveryGradient) {
  Params m;
  auto opt = makeOptimizer(OptimizerConfig::sgd(0.1f), m.ptrs());
  ASSERT_TRUE(opt.isOk());
  m.setGrads(1);
  ASSERT_TRUE((*opt)->zeroGrad().isOk());
  for (const auto& g : m.grad) EXPECT_EQ(g, std::vector<float>(g.size(), 0.f));
}

TEST(OptimizerDeviceTest, GradNormAndClipCoefficientMatchClosedForms) {
  Params m;
  m.setGrads(2);
  double sq = 0;
  for (const auto& g : m.grad) {
    for (float v : g) sq += static_cast<double>(v) * v;
  }
  std::vector<Parameter*> ps = m.ptrs();
  auto norm = globalGradNorm(ps);
  ASSERT_TRUE(norm.isOk()) << norm.status();
  EXPECT_NEAR(*norm, std::sqrt(sq), 1e-12 * std::sqrt(sq));
  ps[1]->grad = nullptr;  // skipped, like a parameter without a gradient
  auto partial = globalGradNorm(ps);
  ASSERT_TRUE(partial.isOk());
  EXPECT_NEAR(*partial, std::sqrt(sq - static_cast<double>(m.grad[1][0]) * m.grad[1][0]), 1e-9);

  EXPECT_EQ(clipCoefficient(3.0, 0.0), 1.f);  // no clipping configured
  EXPECT_EQ(clipCoefficient(3.0, 5.0), 1.f);  // under the limit
  EXPECT_EQ(clipCoefficient(5.0, 5.0), 1.f);
  EXPECT_FLOAT_EQ(clipCoefficient(10.0, 2.5), static_cast<float>(2.5 / (10.0 + 1e-6)));
  // Clipped gradients have norm maxNorm (up to the 1e-6 guard).
  const float c = clipCoefficient(*norm, 0.5);
  EXPECT_NEAR(c * *norm, 0.5, 1e-6);
}

}  // namespace
}  // namespace ddp::optim
