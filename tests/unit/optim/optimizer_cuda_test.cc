// Optimizer (SGD with momentum / dampening / nesterov / weight decay, Adam, AdamW) on CUDA
// parameters against the same optimizer on the CPU (the twin, kernels/optim_ops.cc): several
// steps with the same gradients, subsets, gradient scaling, the state round trip through the
// host in both directions (CPU and CUDA states are interchangeable), zeroGrad and the gradient
// norm. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/flat_buffer.h"
#include "tests/support/float_params.h"
#include "worker/optim/grad_norm.h"
#include "worker/optim/optimizer.h"

namespace ddp::optim {
namespace {

bool haveGpu() {
  int count = 0;  // stays 0 when cudaGetDeviceCount fails (error 35 without a GPU)
  if (cudaGetDeviceCount(&count) != cudaSuccess) return false;
  return count > 0;
}

const std::vector<size_t> kSizes = {33, 1, 4097, 0, 300};

float initValue(size_t i, size_t k) { return std::cos(0.4f * (i + 1) + 0.23f * k); }
float gradValue(size_t i, size_t k, int step) { return std::sin(0.7f * (i + 1) + 0.31f * k + 1.3f * step); }

kernels::FlatView hostView(std::vector<float>& v) { return {v.data(), v.size(), DType::kF32, Device::cpu()}; }

// The CUDA twin of test::FloatParams: device data and gradients, uploaded from the host.
struct DeviceParams {
  std::vector<kernels::FlatBuffer> data, grad;
  std::vector<Parameter> params;

  DeviceParams() : params(kSizes.size()) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
      auto d = kernels::FlatBuffer::allocate(kSizes[i], DType::kF32, Device::cuda(0));
      auto g = kernels::FlatBuffer::allocate(kSizes[i], DType::kF32, Device::cuda(0));
      EXPECT_TRUE(d.isOk() && g.isOk());
      data.push_back(std::move(*d));
      grad.push_back(std::move(*g));
      std::vector<float> host(kSizes[i]);
      for (size_t k = 0; k < host.size(); ++k) host[k] = initValue(i, k);
      EXPECT_TRUE(kernels::copyFlat(data[i].view(), hostView(host)).isOk());
      Parameter& p = params[i];
      p.name = "p" + std::to_string(i);
      p.shape = {static_cast<int64_t>(kSizes[i])};
      p.device = Device::cuda(0);
      p.data = data[i].data();
      p.grad = grad[i].data();
    }
  }
  std::vector<Parameter*> ptrs() {
    std::vector<Parameter*> out;
    for (auto& p : params) out.push_back(&p);
    return out;
  }
  void setGrads(int step) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
      std::vector<float> host(kSizes[i]);
      for (size_t k = 0; k < host.size(); ++k) host[k] = gradValue(i, k, step);
      EXPECT_TRUE(kernels::copyFlat(grad[i].view(), hostView(host)).isOk());
    }
  }
  std::vector<std::vector<float>> hostOf(const std::vector<kernels::FlatBuffer>& bufs) const {
    std::vector<std::vector<float>> out;
    for (const auto& b : bufs) {
      std::vector<float> host(b.count());
      EXPECT_TRUE(kernels::copyFlat(hostView(host), b.view()).isOk());
      out.push_back(std::move(host));
    }
    return out;
  }
};

struct HostParams : test::FloatParams {
  HostParams() : FloatParams(kSizes, initValue) {}
  void setGrads(int step) {
    for (size_t i = 0; i < kSizes.size(); ++i) {
      for (size_t k = 0; k < kSizes[i]; ++k) grad[i][k] = gradValue(i, k, step);
    }
  }
};

struct Case {
  const char* name;
  OptimizerConfig config;
};

std::vector<Case> cases() {
  return {
      {"sgd", OptimizerConfig::sgd(0.1f)},
      {"sgd-momentum-dampening-wd", OptimizerConfig::sgd(0.05f, 0.9f, 0.3f, 0.01f)},
      {"sgd-nesterov", OptimizerConfig::sgd(0.05f, 0.9f, 0.f, 0.01f, true)},
      {"adam", OptimizerConfig::adam(0.01f, 0.9f, 0.999f, 1e-8f, 0.02f)},
      {"adamw", OptimizerConfig::adamw(0.01f)},
  };
}

constexpr float kRelTol = 2e-5f;  // a few ulps per step (fused multiply-add may differ)

TEST(OptimizerCudaTest, StepsMatchTheCpuTwin) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    HostParams cpu;
    DeviceParams gpu;
    auto cpuOpt = makeOptimizer(c.config, cpu.ptrs());
    auto gpuOpt = makeOptimizer(c.config, gpu.ptrs());
    ASSERT_TRUE(cpuOpt.isOk() && gpuOpt.isOk());
    ASSERT_EQ((*gpuOpt)->device(), Device::cuda(0));
    const std::vector<size_t> subset = {0, 2};
    for (int step = 0; step < 5; ++step) {
      cpu.setGrads(step);
      gpu.setGrads(step);
      const float scale = step == 3 ? 0.25f : 1.f;  // averaging / clipping folded in
      if (step == 1) {  // a subset steps only those parameters (per-parameter step counts)
        ASSERT_TRUE((*cpuOpt)->stepParameters(subset, scale).isOk());
        ASSERT_TRUE((*gpuOpt)->stepParameters(subset, scale).isOk());
      } else {
        ASSERT_TRUE((*cpuOpt)->step(scale).isOk());
        Status st = (*gpuOpt)->step(scale);
        ASSERT_TRUE(st.isOk()) << st;
      }
      ASSERT_NO_FATAL_FAILURE(test::expectAllNear(gpu.hostOf(gpu.data), cpu.data, kRelTol, "parameters"));
    }
    EXPECT_EQ((*gpuOpt)->stateBytes(), (*cpuOpt)->stateBytes());
    for (size_t i = 0; i < kSizes.size(); ++i) {
      auto s = (*gpuOpt)->hostParamState(i);
      ASSERT_TRUE(s.isOk()) << s.status();
      const ParamState& want = (*cpuOpt)->state(i);
      EXPECT_EQ(s->step, want.step);
      ASSERT_EQ(s->slots.size(), want.slots.size());
      ASSERT_NO_FATAL_FAILURE(test::expectAllNear(s->slots, want.slots, kRelTol, "state"));
    }
  }
}

TEST(OptimizerCudaTest, StateRoundTripsBetweenCpuAndCuda) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    // Three steps on the CPU, saved; a CUDA optimizer loads the CPU state and a CPU optimizer
    // loads the CUDA one: the next steps agree with the uninterrupted CPU run.
    HostParams cpu;
    auto cpuOpt = makeOptimizer(c.config, cpu.ptrs());
    ASSERT_TRUE(cpuOpt.isOk());
    for (int step = 0; step < 3; ++step) {
      cpu.setGrads(step);
      ASSERT_TRUE((*cpuOpt)->step().isOk());
    }
    DeviceParams gpu;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      ASSERT_TRUE(kernels::copyFlat(gpu.data[i].view(), hostView(cpu.data[i])).isOk());
    }
    auto gpuOpt = makeOptimizer(c.config, gpu.ptrs());
    ASSERT_TRUE(gpuOpt.isOk());
    Status loaded = (*gpuOpt)->loadStateDict((*cpuOpt)->stateDict());
    ASSERT_TRUE(loaded.isOk()) << loaded;
    auto saved = (*gpuOpt)->hostStateDict();
    ASSERT_TRUE(saved.isOk()) << saved.status();
    EXPECT_EQ(*saved, (*cpuOpt)->stateDict());  // exact: copies only, same format

    for (int step = 3; step < 5; ++step) {
      cpu.setGrads(step);
      gpu.setGrads(step);
      ASSERT_TRUE((*cpuOpt)->step().isOk());
      ASSERT_TRUE((*gpuOpt)->step().isOk());
    }
    ASSERT_NO_FATAL_FAILURE(test::expectAllNear(gpu.hostOf(gpu.data), cpu.data, kRelTol, "after CPU -> CUDA load"));

    HostParams back;
    const auto trained = gpu.hostOf(gpu.data);
    for (size_t i = 0; i < kSizes.size(); ++i) std::copy(trained[i].begin(), trained[i].end(), back.data[i].begin());
    auto backOpt = makeOptimizer(c.config, back.ptrs());
    ASSERT_TRUE(backOpt.isOk());
    auto gpuState = (*gpuOpt)->hostStateDict();
    ASSERT_TRUE(gpuState.isOk());
    ASSERT_TRUE((*backOpt)->loadStateDict(*gpuState).isOk());
    back.setGrads(5);
    cpu.setGrads(5);
    ASSERT_TRUE((*backOpt)->step().isOk());
    ASSERT_TRUE((*cpuOpt)->step().isOk());
    ASSERT_NO_FATAL_FAILURE(test::expectAllNear(back.data, cpu.data, kRelTol, "after CUDA -> CPU load"));
  }
}

TEST(OptimizerCudaTest, ZeroGradAndGradNormOnTheDevice) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  HostParams cpu;
  DeviceParams gpu;
  cpu.setGrads(4);
  gpu.setGrads(4);
  auto want = globalGradNorm(cpu.ptrs());
  auto got = globalGradNorm(gpu.ptrs());
  ASSERT_TRUE(want.isOk() && got.isOk()) << got.status();
  EXPECT_NEAR(*got, *want, 1e-9 * *want);
  auto opt = makeOptimizer(OptimizerConfig::sgd(0.1f), gpu.ptrs());
  ASSERT_TRUE(opt.isOk());
  ASSERT_TRUE((*opt)->zeroGrad().isOk());
  for (const auto& g : gpu.hostOf(gpu.grad)) EXPECT_EQ(g, std::vector<float>(g.size(), 0.f));
  auto zero = globalGradNorm(gpu.ptrs());
  ASSERT_TRUE(zero.isOk());
  EXPECT_EQ(*zero, 0.0);
}

}  // namespace
}  // namespace ddp::optim
