// linalg::sgemm (CPU twin) against naive loops, including leading dimensions, batches, alpha and
// beta, and its argument validation.
#include "kernels/linalg_ops.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ddp::kernels::linalg {
namespace {

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

struct Case {
  bool ta, tb;
  int64_t m, n, k, pad, batch;
};

class SgemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(SgemmTest, MatchesNaiveLoops) {
  const Case c = GetParam();
  GemmShape s;
  s.transA = c.ta;
  s.transB = c.tb;
  s.m = c.m;
  s.n = c.n;
  s.k = c.k;
  const int64_t aRows = c.ta ? c.k : c.m, aCols = c.ta ? c.m : c.k;
  const int64_t bRows = c.tb ? c.n : c.k, bCols = c.tb ? c.k : c.n;
  s.lda = aCols + c.pad;
  s.ldb = bCols + c.pad;
  s.ldc = c.n + c.pad;
  s.batch = c.batch;
  s.strideA = aRows * s.lda;
  s.strideB = bRows * s.ldb;
  s.strideC = c.m * s.ldc;
  auto a = randomVector(s.strideA * c.batch, 1);
  auto b = randomVector(s.strideB * c.batch, 2);
  auto out = randomVector(s.strideC * c.batch, 3);
  const auto before = out;
  const float alpha = 0.5f, beta = -2.f;
  ASSERT_TRUE(sgemm(Device::cpu(), s, alpha, a.data(), b.data(), beta, out.data()).isOk());
  for (int64_t bi = 0; bi < c.batch; ++bi) {
    const float* A = a.data() + bi * s.strideA;
    const float* B = b.data() + bi * s.strideB;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < s.ldc; ++j) {
        const size_t at = bi * s.strideC + i * s.ldc + j;
        if (j >= c.n) {
          EXPECT_EQ(out[at], before[at]) << "padding written";
          continue;
        }
        double acc = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          const double av = c.ta ? A[l * s.lda + i] : A[i * s.lda + l];
          const double bv = c.tb ? B[j * s.ldb + l] : B[l * s.ldb + j];
          acc += av * bv;
        }
        const double want = alpha * acc + beta * before[at];
        EXPECT_NEAR(out[at], want, 1e-4 * (1 + std::abs(want))) << bi << " " << i << " " << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SgemmTest,
                         ::testing::Values(Case{false, false, 1, 1, 1, 0, 1}, Case{false, false, 5, 3, 7, 0, 1},
                                           Case{true, false, 6, 2, 9, 1, 2}, Case{false, true, 4, 11, 3, 2, 3},
                                           Case{true, true, 8, 5, 6, 0, 2}, Case{false, false, 3, 4, 0, 1, 1}));

TEST(SgemmValidationTest, RejectsBadShapesByName) {
  GemmShape s;
  s.m = 2;
  s.n = 2;
  s.k = 3;
  s.lda = 2;  // < k
  s.ldb = 2;
  s.ldc = 2;
  float x = 0;
  Status st = sgemm(Device::cpu(), s, 1.f, &x, &x, 0.f, &x);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("lda"), std::string::npos);
  s.lda = 3;
  s.m = -1;
  EXPECT_NE(validateGemm(s).message().find("m = -1"), std::string::npos);
}

}  // namespace
}  // namespace ddp::kernels::linalg
