// CUDA PowerSGD kernels and sgemm against their CPU twins. Skips when no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/linalg_ops.h"
#include "kernels/powersgd_ops.h"

namespace ddp::kernels::powersgd {
namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);

bool haveGpu() {
  int count = 0;  // cudaGetDeviceCount leaves it untouched (error 35) without a GPU
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device"

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Device copy of a host vector, freed on destruction.
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<float>& host) : n_(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(n_, 1) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVector() { cudaFree(ptr_); }
  float* get() { return static_cast<float*>(ptr_); }
  std::vector<float> host() const {
    std::vector<float> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

void expectClose(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
  }
}

TEST(PowerSgdOpsCudaTest, ElementwiseKernelsMatchCpuBitwise) {
  SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
    auto grad = randomVector(n, 1), error = randomVector(n, 2);
    DeviceVector dGrad(grad), dError(error);
    ASSERT_TRUE(errorFeedbackAdd(kCpu, grad.data(), error.data(), n).isOk());
    ASSERT_TRUE(errorFeedbackAdd(kGpu, dGrad.get(), dError.get(), n).isOk());
    EXPECT_EQ(dGrad.host(), grad);

    auto approx = randomVector(n, 3);
    DeviceVector dApprox(approx);
    ASSERT_TRUE(errorFeedbackUpdate(kCpu, grad.data(), approx.data(), n).isOk());
    ASSERT_TRUE(errorFeedbackUpdate(kGpu, dGrad.get(), dApprox.get(), n).isOk());
    EXPECT_EQ(dGrad.host(), grad);
    EXPECT_EQ(dApprox.host(), approx);

    ASSERT_TRUE(scale(kCpu, grad.data(), n, 0.125f).isOk());
    ASSERT_TRUE(scale(kGpu, dGrad.get(), n, 0.125f).isOk());
    EXPECT_EQ(dGrad.host(), grad);
  }
}

class OrthogonalizeCudaTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t, float>> {};

TEST_P(OrthogonalizeCudaTest, MatchesCpuTwin) {
  SKIP_WITHOUT_GPU();
  const auto [batch, n, r, eps] = GetParam();
  auto a = randomVector(batch * n * r, 4);
  DeviceVector d(a);
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), batch, n, r, eps).isOk());
  ASSERT_TRUE(orthogonalize(kGpu, d.get(), batch, n, r, eps).isOk());
  expectClose(d.host(), a, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, OrthogonalizeCudaTest,
                         ::testing::Values(std::make_tuple(1, 1, 1, 0.f), std::make_tuple(1, 300, 4, 0.f),
                                           std::make_tuple(5, 1000, 8, 1e-8f), std::make_tuple(2, 4097, 2, 0.5f)));

TEST(OrthogonalizeCudaTest, ZeroColumnStaysZero) {
  SKIP_WITHOUT_GPU();
  std::vector<float> a{1.f, 1.f, 0.f, 0.f, 0.f, 0.f};
  DeviceVector d(a);
  ASSERT_TRUE(orthogonalize(kGpu, d.get(), 1, 3, 2, 0.f).isOk());
  EXPECT_EQ(d.host(), (std::vector<float>{1.f, 0.f, 0.f, 0.f, 0.f, 0.f}));
}

class ProductsCudaTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t, size_t>> {};

TEST_P(ProductsCudaTest, MatchCpuTwin) {
  SKIP_WITHOUT_GPU();
  const auto [batch, rows, cols, r] = GetParam();
  auto m = randomVector(batch * rows * cols, 5);
  auto q = randomVector(batch * cols * r, 6);
  std::vector<float> p(batch * rows * r), q2(batch * cols * r), m2(batch * rows * cols);
  DeviceVector dm(m), dq(q), dp(p), dq2(q2), dm2(m2);
  ASSERT_TRUE(computeP(kCpu, m.data(), q.data(), p.data(), batch, rows, cols, r).isOk());
  ASSERT_TRUE(computeP(kGpu, dm.get(), dq.get(), dp.get(), batch, rows, cols, r).isOk());
  expectClose(dp.host(), p, 1e-4);
  // Continue both from the CPU's P so differences do not compound.
  DeviceVector dpCpu(p);
  ASSERT_TRUE(computeQ(kCpu, m.data(), p.data(), q2.data(), batch, rows, cols, r).isOk());
  ASSERT_TRUE(computeQ(kGpu, dm.get(), dpCpu.get(), dq2.get(), batch, rows, cols, r).isOk());
  expectClose(dq2.host(), q2, 1e-4);
  DeviceVector dq2Cpu(q2);
  ASSERT_TRUE(decompress(kCpu, p.data(), q2.data(), m2.data(), batch, rows, cols, r).isOk());
  ASSERT_TRUE(decompress(kGpu, dpCpu.get(), dq2Cpu.get(), dm2.get(), batch, rows, cols, r).isOk());
  expectClose(dm2.host(), m2, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ProductsCudaTest,
                         ::testing::Values(std::make_tuple(1, 1, 1, 1), std::make_tuple(1, 33, 17, 2),
                                           std::make_tuple(4, 128, 256, 4), std::make_tuple(1, 2048, 1024, 8)));

TEST(FusedCudaTest, ErrorFeedbackProductsMatchCpuTwin) {
  SKIP_WITHOUT_GPU();
  const size_t rows = 300, cols = 257, r = 4;
  auto m = randomVector(rows * cols, 30), error = randomVector(rows * cols, 31), q = randomVector(cols * r, 32);
  std::vector<float> p(rows * r);
  DeviceVector dm(m), de(error), dq(q), dp(p);
  ASSERT_TRUE(addErrorAndComputeP(kCpu, m.data(), error.data(), q.data(), p.data(), rows, cols, r).isOk());
  ASSERT_TRUE(addErrorAndComputeP(kGpu, dm.get(), de.get(), dq.get(), dp.get(), rows, cols, r).isOk());
  EXPECT_EQ(dm.host(), m);
  expectClose(dp.host(), p, 1e-4);
  DeviceVector dpCpu(p);
  ASSERT_TRUE(decompressWithError(kCpu, m.data(), p.data(), q.data(), error.data(), rows, cols, r).isOk());
  ASSERT_TRUE(decompressWithError(kGpu, dm.get(), dpCpu.get(), dq.get(), de.get(), rows, cols, r).isOk());
  expectClose(dm.host(), m, 1e-4);
  expectClose(de.host(), error, 1e-4);
}

TEST(FusedCudaTest, CompensationMatchesCpuTwin) {
  SKIP_WITHOUT_GPU();
  const size_t rows = 300, cols = 257, r = 4;
  auto grad = randomVector(rows * cols, 33), sum = randomVector(rows * cols, 34);
  auto prevP = randomVector(rows * r, 35), prevQ = randomVector(cols * r, 36), q = randomVector(cols * r, 37);
  std::vector<float> p(rows * r);
  DeviceVector dg(grad), ds(sum), dpp(prevP), dpq(prevQ), dq(q), dp(p);
  ASSERT_TRUE(compensateAndComputeP(kCpu, grad.data(), sum.data(), prevP.data(), prevQ.data(), q.data(), p.data(), rows,
                                    cols, r).isOk());
  ASSERT_TRUE(compensateAndComputeP(kGpu, dg.get(), ds.get(), dpp.get(), dpq.get(), dq.get(), dp.get(), rows, cols, r)
                  .isOk());
  EXPECT_EQ(dg.host(), grad);
  // Both evaluate P' Q'^T as a fused multiply-add chain over k from zero.
  EXPECT_EQ(ds.host(), sum);
  expectClose(dp.host(), p, 1e-4);
}

TEST(SgemmCudaTest, LeadingDimensionsAndBetaMatchCpu) {
  SKIP_WITHOUT_GPU();
  linalg::GemmShape s;
  s.transA = true;
  s.m = 7;
  s.n = 5;
  s.k = 9;
  s.lda = 8;   // A stored k x m with padding
  s.ldb = 6;   // B stored k x n with padding
  s.ldc = 7;
  s.batch = 2;
  s.strideA = s.k * s.lda;
  s.strideB = s.k * s.ldb;
  s.strideC = s.m * s.ldc;
  auto a = randomVector(s.strideA * 2, 7), b = randomVector(s.strideB * 2, 8), c = randomVector(s.strideC * 2, 9);
  DeviceVector da(a), db(b), dc(c);
  ASSERT_TRUE(linalg::sgemm(kCpu, s, 1.5f, a.data(), b.data(), 0.5f, c.data()).isOk());
  ASSERT_TRUE(linalg::sgemm(kGpu, s, 1.5f, da.get(), db.get(), 0.5f, dc.get()).isOk());
  expectClose(dc.host(), c, 1e-5);
}

}  // namespace
}  // namespace ddp::kernels::powersgd
