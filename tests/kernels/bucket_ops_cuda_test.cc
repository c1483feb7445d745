// CUDA bucket and cast kernels against their CPU twins, bit for bit (both round to nearest
// even and neither contracts into FMA). Skips when no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"

namespace ddp::kernels {
namespace {

bool haveGpu() {
  int count = 0;  // stays 0 when cudaGetDeviceCount fails (no driver / no device)
  if (cudaGetDeviceCount(&count) != cudaSuccess) return false;
  return count > 0;
}

// A host buffer and its device copy.
struct Twin {
  std::vector<char> host;
  void* dev = nullptr;
  size_t n;
  DType dtype;
  Twin(size_t count, DType t) : host(count * dtypeSize(t)), n(count), dtype(t) {
    EXPECT_EQ(cudaMalloc(&dev, host.size() + 1), cudaSuccess);
  }
  ~Twin() { cudaFree(dev); }
  FlatView cpu() { return {host.data(), n, dtype, Device::cpu()}; }
  FlatView gpu() { return {dev, n, dtype, Device::cuda(0)}; }
  void upload() { ASSERT_EQ(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess); }
  std::vector<char> download() {
    std::vector<char> out(host.size());
    EXPECT_EQ(cudaMemcpy(out.data(), dev, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

void fillRandom(Twin& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 50.0f);
  std::vector<float> v(t.n);
  for (auto& x : v) x = normal(rng);
  ASSERT_TRUE(castScaled(t.cpu(), {v.data(), t.n}).isOk());
  t.upload();
}

const DType kTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};

TEST(BucketOpsCudaTest, CastScaledEveryPairMatchesCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  const size_t n = 100003;
  for (DType st : kTypes) {
    for (DType dt : kTypes) {
      Twin src(n, st), dst(n, dt);
      fillRandom(src, 7);
      ASSERT_TRUE(castScaled(dst.cpu(), src.cpu(), 0.37).isOk());
      ASSERT_TRUE(castScaled(dst.gpu(), src.gpu(), 0.37).isOk());
      EXPECT_EQ(dst.download(), dst.host) << dtypeName(st) << " -> " << dtypeName(dt);
    }
  }
}

TEST(BucketOpsCudaTest, AxpbyScaleZeroMatchCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  const size_t n = 4097;
  for (DType st : kTypes) {
    for (DType dt : kTypes) {
      Twin src(n, st), dst(n, dt);
      fillRandom(src, 1);
      fillRandom(dst, 2);
      ASSERT_TRUE(axpby(dst.cpu(), 0.5, src.cpu(), -3.0).isOk());
      ASSERT_TRUE(axpby(dst.gpu(), 0.5, src.gpu(), -3.0).isOk());
      EXPECT_EQ(dst.download(), dst.host) << dtypeName(st) << " -> " << dtypeName(dt);
    }
    Twin b(n, st);
    fillRandom(b, 3);
    ASSERT_TRUE(scaleInPlace(b.cpu(), 0.125).isOk());
    ASSERT_TRUE(scaleInPlace(b.gpu(), 0.125).isOk());
    EXPECT_EQ(b.download(), b.host);
    ASSERT_TRUE(fillZero(b.gpu()).isOk());
    EXPECT_EQ(b.download(), std::vector<char>(b.host.size(), 0));
  }
}

TEST(BucketOpsCudaTest, PackUnpackMatchCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  const size_t sizes[] = {0, 1, 7, 3000};
  std::vector<std::unique_ptr<Twin>> grads;
  size_t total = 0;
  for (size_t s : sizes) {
    grads.push_back(std::make_unique<Twin>(s, DType::kF32));
    fillRandom(*grads.back(), static_cast<uint32_t>(s));
    total += s;
  }
  for (DType bt : kTypes) {
    Twin bucket(total, bt);
    std::vector<FlatView> cpuViews, gpuViews;
    for (auto& g : grads) {
      cpuViews.push_back(g->cpu());
      gpuViews.push_back(g->gpu());
    }
    ASSERT_TRUE(packBucket(bucket.cpu(), cpuViews, 0.5).isOk());
    ASSERT_TRUE(packBucket(bucket.gpu(), gpuViews, 0.5).isOk());
    EXPECT_EQ(bucket.download(), bucket.host) << dtypeName(bt);
    ASSERT_TRUE(unpackBucket(bucket.cpu(), cpuViews, 2.0).isOk());
    ASSERT_TRUE(unpackBucket(bucket.gpu(), gpuViews, 2.0).isOk());
    for (auto& g : grads) EXPECT_EQ(g->download(), g->host) << dtypeName(bt);
  }
}

}  // namespace
}  // namespace ddp::kernels
