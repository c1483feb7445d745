// CPU twins of the fused optimizer kernels: multi-tensor calls equal per-tensor calls, the
// norm helpers equal a double-precision oracle, and the CUDA entry points report Unimplemented
// in a CPU-only build.
#include "kernels/optim_ops.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ddp::kernels {
namespace {

TEST(OptimOpsTest, MultiTensorAdamEqualsOneCallPerTensor) {
  std::vector<float> p1{1, 2, 3}, g1{0.1f, -0.2f, 0.3f}, m1(3, 0.f), v1(3, 0.f);
  std::vector<float> p2{4, 5}, g2{-1, 1}, m2(2, 0.f), v2(2, 0.f);
  auto q1 = p1, q2 = p2, n1 = m1, n2 = m2, w1 = v1, w2 = v2;
  AdamHyper h;
  h.lr = 0.1f;
  adamStepCpu({{p1.data(), g1.data(), m1.data(), v1.data(), 3, 1}, {p2.data(), g2.data(), m2.data(), v2.data(), 2, 4}}, h);
  adamStepCpu({{q1.data(), g1.data(), n1.data(), w1.data(), 3, 1}}, h);
  adamStepCpu({{q2.data(), g2.data(), n2.data(), w2.data(), 2, 4}}, h);
  EXPECT_EQ(p1, q1);
  EXPECT_EQ(p2, q2);
  EXPECT_EQ(v2, w2);
  EXPECT_NE(p2[0], 4.f);
}

TEST(OptimOpsTest, SumSquaresAndScale) {
  for (size_t n : {0u, 1u, 3u, 4u, 1001u}) {
    std::vector<float> x(n);
    double oracle = 0;
    for (size_t i = 0; i < n; ++i) {
      x[i] = std::cos(0.1f * i);
      oracle += static_cast<double>(x[i]) * x[i];
    }
    EXPECT_NEAR(sumSquaresCpu(x.data(), n), oracle, 1e-9 * (1 + oracle)) << n;
    scaleCpu(x.data(), n, 2.f);
    EXPECT_NEAR(sumSquaresCpu(x.data(), n), 4 * oracle, 1e-8 * (1 + oracle));
  }
}

#ifndef DDP_WITH_CUDA
TEST(OptimOpsTest, CudaEntryPointsAreUnimplementedWithoutCuda) {
  EXPECT_EQ(adamStepCuda({}, AdamHyper{}).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(sgdStepCuda({}, SgdHyper{}).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(sumSquaresCuda(nullptr, 0).status().code(), StatusCode::kUnimplemented);
}
#endif

}  // namespace
}  // namespace ddp::kernels
