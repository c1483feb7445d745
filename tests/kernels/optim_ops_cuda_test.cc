// CUDA fused optimizer kernels against their CPU twins (kernels/optim_ops.h). Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/optim_ops.h"

namespace ddp::kernels {
namespace {

bool haveGpu() {
  int n = 0;  // stays 0 when cudaGetDeviceCount fails (error 35 without a GPU)
  if (cudaGetDeviceCount(&n) != cudaSuccess) return false;
  return n > 0;
}

struct DeviceVec {
  float* d = nullptr;
  size_t n = 0;
  explicit DeviceVec(const std::vector<float>& h) : n(h.size()) {
    EXPECT_EQ(cudaMalloc(&d, std::max<size_t>(n, 1) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVec() { cudaFree(d); }
  std::vector<float> host() const {
    std::vector<float> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

std::vector<float> randomVec(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void expectClose(const std::vector<float>& a, const std::vector<float>& b, float rel) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], rel * (1.f + std::fabs(b[i]))) << "at " << i;
  }
}

TEST(OptimOpsCudaTest, AdamAndAdamWMatchCpuTwinOverManyTensors) {
  if (!haveGpu()) GTEST_SKIP() << "no GPU";
  std::mt19937 rng(3);
  for (bool decoupled : {false, true}) {
    AdamHyper h;
    h.lr = 1e-2f;
    h.weightDecay = 0.05f;
    h.decoupled = decoupled;
    const std::vector<size_t> sizes{0, 1, 7, 65536, 65537, 200001};
    std::vector<std::vector<float>> p, g, m, v;
    for (size_t n : sizes) {
      p.push_back(randomVec(n, rng));
      g.push_back(randomVec(n, rng));
      m.push_back(randomVec(n, rng, -0.1f, 0.1f));
      v.push_back(randomVec(n, rng, 0.f, 0.1f));
    }
    std::vector<std::unique_ptr<DeviceVec>> dp, dg, dm, dv;
    std::vector<AdamTensor> cpu, gpu;
    for (size_t k = 0; k < sizes.size(); ++k) {
      dp.push_back(std::make_unique<DeviceVec>(p[k]));
      dg.push_back(std::make_unique<DeviceVec>(g[k]));
      dm.push_back(std::make_unique<DeviceVec>(m[k]));
      dv.push_back(std::make_unique<DeviceVec>(v[k]));
      cpu.push_back({p[k].data(), g[k].data(), m[k].data(), v[k].data(), sizes[k], static_cast<int64_t>(k + 1)});
      gpu.push_back({dp[k]->d, dg[k]->d, dm[k]->d, dv[k]->d, sizes[k], static_cast<int64_t>(k + 1)});
    }
    adamStepCpu(cpu, h, 0.5f);
    ASSERT_TRUE(adamStepCuda(gpu, h, 0.5f).isOk());
    for (size_t k = 0; k < sizes.size(); ++k) {
      expectClose(dp[k]->host(), p[k], 1e-5f);
      expectClose(dm[k]->host(), m[k], 1e-5f);
      expectClose(dv[k]->host(), v[k], 1e-5f);
    }
  }
}

TEST(OptimOpsCudaTest, SgdMatchesCpuTwin) {
  if (!haveGpu()) GTEST_SKIP() << "no GPU";
  std::mt19937 rng(5);
  for (bool nesterov : {false, true}) {
    for (bool first : {true, false}) {
      SgdHyper h;
      h.lr = 0.1f;
      h.momentum = 0.9f;
      h.dampening = nesterov ? 0.f : 0.2f;
      h.nesterov = nesterov;
      h.weightDecay = 1e-3f;
      auto p = randomVec(100003, rng), g = randomVec(100003, rng), b = randomVec(100003, rng);
      DeviceVec dp(p), dg(g), db(b);
      sgdStepCpu({{p.data(), g.data(), b.data(), p.size(), first}}, h);
      ASSERT_TRUE(sgdStepCuda({{dp.d, dg.d, db.d, p.size(), first}}, h).isOk());
      expectClose(dp.host(), p, 1e-6f);
      expectClose(db.host(), b, 1e-6f);
    }
  }
}

TEST(OptimOpsCudaTest, SumSquaresAndScaleMatchCpuTwin) {
  if (!haveGpu()) GTEST_SKIP() << "no GPU";
  std::mt19937 rng(7);
  auto x = randomVec(1 << 20, rng);
  DeviceVec dx(x);
  auto s = sumSquaresCuda(dx.d, x.size());
  ASSERT_TRUE(s.isOk()) << s.status();
  EXPECT_NEAR(*s, sumSquaresCpu(x.data(), x.size()), 1e-9 * *s);
  scaleCpu(x.data(), x.size(), 0.25f);
  ASSERT_TRUE(scaleCuda(dx.d, x.size(), 0.25f).isOk());
  EXPECT_EQ(dx.host(), x);
}

}  // namespace
}  // namespace ddp::kernels
