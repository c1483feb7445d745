// CPU twins of the PowerSGD kernels against closed forms and naive loops.
#include "kernels/powersgd_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/linalg_ops.h"
#include "kernels/powersgd_ops_cpu.h"

namespace ddp::kernels::powersgd {
namespace {

const Device kCpu = Device::cpu();

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Naive row-major products (the oracle).
std::vector<double> naiveMatmul(const std::vector<float>& a, bool transA, const std::vector<float>& b,
                                bool transB, size_t m, size_t n, size_t k) {
  std::vector<double> c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t l = 0; l < k; ++l) {
        const double av = transA ? a[l * m + i] : a[i * k + l];
        const double bv = transB ? b[j * k + l] : b[l * n + j];
        s += av * bv;
      }
      c[i * n + j] = s;
    }
  return c;
}

double columnDot(const float* a, size_t n, size_t r, size_t i, size_t j) {
  double s = 0;
  for (size_t k = 0; k < n; ++k) s += static_cast<double>(a[k * r + i]) * a[k * r + j];
  return s;
}

class ProductsTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t, size_t>> {};

TEST_P(ProductsTest, MatchNaiveLoops) {
  const auto [batch, rows, cols, r] = GetParam();
  auto m = randomVector(batch * rows * cols, 1);
  auto q = randomVector(batch * cols * r, 2);
  std::vector<float> p(batch * rows * r, -7.f);
  ASSERT_TRUE(computeP(kCpu, m.data(), q.data(), p.data(), batch, rows, cols, r).isOk());
  std::vector<float> q2(batch * cols * r, -7.f);
  ASSERT_TRUE(computeQ(kCpu, m.data(), p.data(), q2.data(), batch, rows, cols, r).isOk());
  std::vector<float> m2(batch * rows * cols, -7.f);
  ASSERT_TRUE(decompress(kCpu, p.data(), q2.data(), m2.data(), batch, rows, cols, r).isOk());
  for (size_t b = 0; b < batch; ++b) {
    auto slice = [](const std::vector<float>& v, size_t off, size_t n) {
      return std::vector<float>(v.begin() + off, v.begin() + off + n);
    };
    auto mb = slice(m, b * rows * cols, rows * cols);
    auto pRef = naiveMatmul(mb, false, slice(q, b * cols * r, cols * r), false, rows, r, cols);
    for (size_t i = 0; i < rows * r; ++i) ASSERT_NEAR(p[b * rows * r + i], pRef[i], 1e-4 * (1 + std::abs(pRef[i]))) << i;
    auto pb = slice(p, b * rows * r, rows * r);
    auto qRef = naiveMatmul(mb, true, pb, false, cols, r, rows);
    for (size_t i = 0; i < cols * r; ++i) ASSERT_NEAR(q2[b * cols * r + i], qRef[i], 1e-4 * (1 + std::abs(qRef[i]))) << i;
    auto mRef = naiveMatmul(pb, false, slice(q2, b * cols * r, cols * r), true, rows, cols, r);
    for (size_t i = 0; i < rows * cols; ++i) ASSERT_NEAR(m2[b * rows * cols + i], mRef[i], 1e-3 * (1 + std::abs(mRef[i]))) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ProductsTest,
                         ::testing::Values(std::make_tuple(1, 1, 1, 1), std::make_tuple(1, 7, 5, 2),
                                           std::make_tuple(3, 16, 33, 4), std::make_tuple(2, 64, 9, 1),
                                           std::make_tuple(1, 3, 40, 3),
                                           // rank > 4 (two groups of Q columns), odd rows and cols
                                           std::make_tuple(1, 13, 37, 8), std::make_tuple(2, 6, 17, 5),
                                           // Q in groups of eight rows, then four, then one
                                           std::make_tuple(1, 29, 24, 4)));

TEST(ProductsTest, EmptyShapesAreNoOps) {
  std::vector<float> p{5.f};
  EXPECT_TRUE(computeP(kCpu, nullptr, nullptr, p.data(), 0, 3, 3, 1).isOk());
  EXPECT_TRUE(computeP(kCpu, nullptr, nullptr, nullptr, 1, 0, 3, 1).isOk());
  EXPECT_EQ(p[0], 5.f);
}

class OrthogonalizeTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t>> {};

TEST_P(OrthogonalizeTest, ColumnsBecomeOrthonormalAndSpanIsKept) {
  const auto [batch, n, r] = GetParam();
  auto a = randomVector(batch * n * r, 3);
  const auto original = a;
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), batch, n, r, 0.f).isOk());
  for (size_t b = 0; b < batch; ++b) {
    const float* m = a.data() + b * n * r;
    for (size_t i = 0; i < r; ++i)
      for (size_t j = 0; j < r; ++j) EXPECT_NEAR(columnDot(m, n, r, i, j), i == j ? 1.0 : 0.0, 1e-5) << i << "," << j;
    // Gram-Schmidt is triangular: column i of the result is a combination of original columns
    // 0..i, so original column 0 is parallel to result column 0 with a positive factor.
    const float* o = original.data() + b * n * r;
    double dot = 0, norm = 0;
    for (size_t k = 0; k < n; ++k) {
      dot += static_cast<double>(o[k * r]) * m[k * r];
      norm += static_cast<double>(o[k * r]) * o[k * r];
    }
    EXPECT_NEAR(dot, std::sqrt(norm), 1e-4 * std::sqrt(norm));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OrthogonalizeTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(1, 10, 1),
                                           std::make_tuple(2, 17, 4), std::make_tuple(3, 300, 8)));

TEST(OrthogonalizeTest, EpsilonDividesByNormPlusEpsilon) {
  std::vector<float> a{3.f, 4.f};  // one column of norm 5
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), 1, 2, 1, 1.f).isOk());
  EXPECT_FLOAT_EQ(a[0], 0.5f);
  EXPECT_FLOAT_EQ(a[1], 4.f / 6.f);
}

TEST(OrthogonalizeTest, ZeroColumnStaysZeroInsteadOfNan) {
  // Column 1 equals column 0: after removing the projection it is exactly zero.
  std::vector<float> a{1.f, 1.f, 0.f, 0.f, 0.f, 0.f};  // 3 x 2, rows (1,1), (0,0), (0,0)
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), 1, 3, 2, 0.f).isOk());
  EXPECT_EQ(a, (std::vector<float>{1.f, 0.f, 0.f, 0.f, 0.f, 0.f}));
  std::vector<float> z(4, 0.f);
  ASSERT_TRUE(orthogonalize(kCpu, z.data(), 1, 4, 1, 0.f).isOk());
  for (float v : z) EXPECT_EQ(v, 0.f);
}

// A 4 x 4 matrix whose last row is zero has rank 3: the fourth column's remainder is roundoff.
// It must come back zero, not as a normalised roundoff column (Note [Gram-Schmidt twice]), so
// P P^T is still a projection.
TEST(OrthogonalizeTest, DependentColumnIsZeroedAndTheRestStaysOrthonormal) {
  auto a = randomVector(16, 9);
  for (size_t j = 0; j < 4; ++j) a[12 + j] = 0.f;
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), 1, 4, 4, 0.f).isOk());
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(columnDot(a.data(), 4, 4, i, j), i == j ? 1.0 : 0.0, 1e-6);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(a[k * 4 + 3], 0.f);
}

TEST(OrthogonalizeTest, NearlyDependentColumnsStayOrthogonal) {
  // Column 1 = column 0 + 1e-3 * noise: one Gram-Schmidt pass loses about 3 digits of
  // orthogonality in float; two passes keep it.
  const size_t n = 500;
  auto base = randomVector(n, 10), noise = randomVector(n, 11);
  std::vector<float> a(2 * n);
  for (size_t k = 0; k < n; ++k) {
    a[2 * k] = base[k];
    a[2 * k + 1] = base[k] + 1e-3f * noise[k];
  }
  ASSERT_TRUE(orthogonalize(kCpu, a.data(), 1, n, 2, 0.f).isOk());
  EXPECT_NEAR(columnDot(a.data(), n, 2, 0, 1), 0.0, 1e-6);
  EXPECT_NEAR(columnDot(a.data(), n, 2, 1, 1), 1.0, 1e-5);
}

TEST(OrthogonalizeTest, NegativeEpsilonIsRejected) {
  std::vector<float> a{1.f};
  EXPECT_EQ(orthogonalize(kCpu, a.data(), 1, 1, 1, -1.f).code(), StatusCode::kInvalidArgument);
}

TEST(ErrorFeedbackTest, AddAndFusedUpdate) {
  auto grad = randomVector(1001, 4);
  auto error = randomVector(1001, 5);
  auto expected = grad;
  for (size_t i = 0; i < grad.size(); ++i) expected[i] += error[i];
  ASSERT_TRUE(errorFeedbackAdd(kCpu, grad.data(), error.data(), grad.size()).isOk());
  EXPECT_EQ(grad, expected);

  auto input = grad;
  auto approx = randomVector(1001, 6);
  auto approxCopy = approx;
  ASSERT_TRUE(errorFeedbackUpdate(kCpu, grad.data(), approx.data(), grad.size()).isOk());
  for (size_t i = 0; i < grad.size(); ++i) {
    EXPECT_EQ(grad[i], approxCopy[i]);
    EXPECT_EQ(approx[i], input[i] - approxCopy[i]);
  }
}

class FusedTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t>> {};

// The fused kernels against their unfused compositions (row blocks must not change the maths).
TEST_P(FusedTest, MatchUnfusedComposition) {
  const auto [rows, cols, r] = GetParam();
  auto m = randomVector(rows * cols, 20), error = randomVector(rows * cols, 21), q = randomVector(cols * r, 22);
  auto m2 = m;
  std::vector<float> p(rows * r), p2(rows * r);
  ASSERT_TRUE(addErrorAndComputeP(kCpu, m.data(), error.data(), q.data(), p.data(), rows, cols, r).isOk());
  ASSERT_TRUE(errorFeedbackAdd(kCpu, m2.data(), error.data(), m2.size()).isOk());
  ASSERT_TRUE(computeP(kCpu, m2.data(), q.data(), p2.data(), 1, rows, cols, r).isOk());
  EXPECT_EQ(m, m2);
  for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], p2[i], 1e-4 * (1 + std::abs(p2[i])));

  auto e1 = randomVector(rows * cols, 23);  // overwritten
  std::vector<float> e2(rows * cols);
  ASSERT_TRUE(decompressWithError(kCpu, m.data(), p.data(), q.data(), e1.data(), rows, cols, r).isOk());
  ASSERT_TRUE(decompress(kCpu, p.data(), q.data(), e2.data(), 1, rows, cols, r).isOk());
  ASSERT_TRUE(errorFeedbackUpdate(kCpu, m2.data(), e2.data(), m2.size()).isOk());
  for (size_t i = 0; i < m.size(); ++i) {
    ASSERT_NEAR(m[i], m2[i], 1e-4 * (1 + std::abs(m2[i]))) << i;
    ASSERT_NEAR(e1[i], e2[i], 1e-4 * (1 + std::abs(e2[i]))) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(7, 5, 2),
                                           std::make_tuple(300, 200, 4), std::make_tuple(50, 3000, 3),
                                           std::make_tuple(9, 19, 6)));

// Note [Deferred error feedback]: the compensation pass against the eager form it replaces.
// `offset` shifts every matrix by that many floats, so rows start misaligned (vector heads and
// tails).
class CompensateTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t, size_t>> {};

TEST_P(CompensateTest, DeferredErrorEqualsTheEagerErrorBitwise) {
  const auto [rows, cols, r, offset] = GetParam();
  auto gradBuf = randomVector(offset + rows * cols, 40), sumBuf = randomVector(offset + rows * cols, 41);
  const auto prevP = randomVector(rows * r, 42), prevQ = randomVector(cols * r, 43), q = randomVector(cols * r, 44);
  const float* grad = gradBuf.data() + offset;
  float* sum = sumBuf.data() + offset;
  const std::vector<float> gradBefore(grad, grad + rows * cols), sumBefore(sum, sum + rows * cols);

  // Eager: error = S - P' Q'^T by the kernel that used to store it, then M = G + error.
  std::vector<float> approx = sumBefore, error(rows * cols);
  ASSERT_TRUE(decompressWithError(kCpu, approx.data(), prevP.data(), prevQ.data(), error.data(), rows, cols, r).isOk());
  std::vector<float> eager(rows * cols);
  for (size_t i = 0; i < eager.size(); ++i) eager[i] = gradBefore[i] + error[i];

  std::vector<float> p(rows * r);
  ASSERT_TRUE(compensateAndComputeP(kCpu, grad, sum, prevP.data(), prevQ.data(), q.data(), p.data(), rows, cols, r).isOk());
  for (size_t i = 0; i < eager.size(); ++i) ASSERT_EQ(sum[i], eager[i]) << "element " << i;
  EXPECT_EQ(std::vector<float>(grad, grad + rows * cols), gradBefore) << "the gradient is only read";
  const auto want = naiveMatmul(eager, false, q, false, rows, r, cols);
  for (size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;

  // Without a sent approximation: M = G + S exactly.
  std::copy(sumBefore.begin(), sumBefore.end(), sum);
  ASSERT_TRUE(compensateAndComputeP(kCpu, grad, sum, nullptr, nullptr, q.data(), p.data(), rows, cols, r).isOk());
  for (size_t i = 0; i < eager.size(); ++i) ASSERT_EQ(sum[i], gradBefore[i] + sumBefore[i]) << "element " << i;
}

// Ranks 1-4 and 8 have unrolled kernels, 5 the generic one; odd row counts leave a single row
// after the pairs; column counts off the vector width leave tails.
INSTANTIATE_TEST_SUITE_P(Shapes, CompensateTest,
                         ::testing::Values(std::make_tuple(1, 1, 1, 0), std::make_tuple(7, 5, 2, 0),
                                           std::make_tuple(64, 2048, 4, 0), std::make_tuple(33, 100, 4, 3),
                                           std::make_tuple(9, 19, 5, 1), std::make_tuple(16, 64, 8, 5),
                                           std::make_tuple(5, 40, 3, 7), std::make_tuple(12, 24, 1, 2)));

// decompress writes M~ with streaming stores after a scalar head that aligns them: every start
// alignment gives P Q^T.
TEST(DecompressTest, EveryStartAlignmentWritesTheProduct) {
  const size_t rows = 6, cols = 40, r = 4;
  const auto p = randomVector(rows * r, 50), q = randomVector(cols * r, 51);
  const auto want = naiveMatmul(p, false, q, true, rows, cols, r);
  for (size_t offset = 0; offset < 8; ++offset) {
    std::vector<float> buf(offset + rows * cols, 7.f);
    ASSERT_TRUE(decompress(kCpu, p.data(), q.data(), buf.data() + offset, 1, rows, cols, r).isOk());
    for (size_t i = 0; i < offset; ++i) ASSERT_EQ(buf[i], 7.f) << "offset " << offset << ": wrote before M";
    for (size_t i = 0; i < rows * cols; ++i) {
      ASSERT_NEAR(buf[offset + i], want[i], 1e-5 * (1 + std::abs(want[i]))) << "offset " << offset << ", " << i;
    }
  }
}

// The batched hook's row-block scratch takes the error with ordinary stores: same values as the
// streaming stores.
TEST(DecompressTest, ErrorStoreModesAgree) {
  const size_t rows = 9, cols = 40, r = 3;
  const auto p = randomVector(rows * r, 60), q = randomVector(cols * r, 61), m = randomVector(rows * cols, 62);
  std::vector<float> qt(r * cols);
  cpu::transposeQ(q.data(), cols, r, qt.data());
  auto m1 = m, m2 = m;
  std::vector<float> e1(rows * cols), e2(rows * cols);
  cpu::decompressTransposed(m1.data(), p.data(), qt.data(), e1.data(), rows, cols, r, /*streamError=*/true);
  cpu::decompressTransposed(m2.data(), p.data(), qt.data(), e2.data(), rows, cols, r, /*streamError=*/false);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(e1, e2);
  const auto want = naiveMatmul(p, false, q, true, rows, cols, r);
  for (size_t i = 0; i < m1.size(); ++i) ASSERT_NEAR(e2[i], m[i] - want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
}

TEST(StreamCopyTest, EveryAlignmentAndLengthCopiesExactly) {
  const auto src = randomVector(100, 63);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{33}, size_t{91}}) {
      std::vector<float> dst(offset + n + 1, -5.f);
      cpu::streamCopy(dst.data() + offset, src.data() + 1, n);
      for (size_t i = 0; i < offset; ++i) ASSERT_EQ(dst[i], -5.f) << "offset " << offset << " n " << n;
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[offset + i], src[1 + i]) << "offset " << offset << " n " << n;
      ASSERT_EQ(dst[offset + n], -5.f) << "offset " << offset << " n " << n << ": wrote past the end";
    }
  }
}

TEST(ScaleTest, MultipliesEveryElement) {
  std::vector<float> x{1.f, -2.f, 4.f};
  ASSERT_TRUE(scale(kCpu, x.data(), x.size(), 0.25f).isOk());
  EXPECT_EQ(x, (std::vector<float>{0.25f, -0.5f, 1.f}));
}

TEST(FillStandardNormalTest, DeterministicPrefixStableAndGaussian) {
  std::vector<float> a(20001), b(20001), c(7);
  fillStandardNormal(a.data(), a.size(), 42);
  fillStandardNormal(b.data(), b.size(), 42);
  fillStandardNormal(c.data(), c.size(), 42);
  EXPECT_EQ(a, b);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], a[i]);  // sample i depends on (seed, i) only
  std::vector<float> d(a.size());
  fillStandardNormal(d.data(), d.size(), 43);
  EXPECT_NE(a, d);
  double mean = 0, var = 0;
  for (float v : a) mean += v;
  mean /= a.size();
  for (float v : a) var += (v - mean) * (v - mean);
  var /= a.size();
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var, 1.0, 0.05);
}

TEST(DeviceDispatchTest, CudaWithoutCudaBuildIsUnimplemented) {
#if !DDP_WITH_CUDA
  float x = 1.f;
  EXPECT_EQ(scale(Device::cuda(0), &x, 1, 2.f).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(computeP(Device::cuda(0), &x, &x, &x, 1, 1, 1, 1).code(), StatusCode::kUnimplemented);
#else
  GTEST_SKIP() << "CUDA build: covered by powersgd_ops_cuda_test";
#endif
}

}  // namespace
}  // namespace ddp::kernels::powersgd
