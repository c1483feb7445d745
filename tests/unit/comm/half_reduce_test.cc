// f16/bf16 reduction kernels: the vectorised path (F16C/AVX2) equals the scalar path bit for
// bit over random bit patterns (NaN, inf, subnormals included), and the scalar path equals the
// definition: widen to f32, one f32 operation, round to nearest even.
#include "worker/comm/half_reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "worker/comm/reduce_kernels.h"

namespace ddp::comm {
namespace {

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax};

float widen(DType d, uint16_t v) { return d == DType::kF16 ? halfToFloat(v) : bf16ToFloat(v); }
uint16_t narrow(DType d, float f) { return d == DType::kF16 ? floatToHalf(f) : floatToBf16(f); }

float apply(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::kProduct: return a * b;
    case ReduceOp::kMin: return a < b ? a : b;
    case ReduceOp::kMax: return a > b ? a : b;
    default: return a + b;
  }
}

bool sameValue(DType d, uint16_t x, uint16_t y) {
  if (std::isnan(widen(d, x)) || std::isnan(widen(d, y))) return std::isnan(widen(d, x)) && std::isnan(widen(d, y));
  return x == y;
}

class HalfReduceTest : public ::testing::TestWithParam<DType> {};

TEST_P(HalfReduceTest, VectorEqualsScalarEqualsDefinition) {
  const DType d = GetParam();
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{1000}, size_t{1037}}) {
    std::vector<uint16_t> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = uint16_t(bits(rng)), b[i] = uint16_t(bits(rng));
    for (ReduceOp op : kOps) {
      std::vector<uint16_t> vec(n), sca(n);
      halfReduceKernel(d, op)(vec.data(), a.data(), b.data(), n);
      halfReduceKernelScalar(d, op)(sca.data(), a.data(), b.data(), n);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        const uint16_t want = narrow(d, apply(op, widen(d, a[i]), widen(d, b[i])));
        if (!sameValue(d, vec[i], sca[i]) || !sameValue(d, sca[i], want)) {
          if (bad++ == 0) {
            ADD_FAILURE() << dtypeName(d) << " " << reduceOpName(op) << " n=" << n << " i=" << i << " a=" << a[i]
                          << " b=" << b[i] << " vector=" << vec[i] << " scalar=" << sca[i] << " want=" << want;
          }
        }
      }
      EXPECT_EQ(bad, 0u);
    }
  }
}

TEST_P(HalfReduceTest, InPlaceAliasingWorks) {
  const DType d = GetParam();
  std::vector<uint16_t> a(100), b(100);
  for (int i = 0; i < 100; ++i) a[i] = narrow(d, float(i % 9)), b[i] = narrow(d, 1.5f);
  reduceKernel(d, ReduceOp::kSum)(a.data(), a.data(), b.data(), a.size());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(widen(d, a[i]), float(i % 9) + 1.5f);
}

TEST_P(HalfReduceTest, DivideRoundsOnce) {
  const DType d = GetParam();
  std::vector<uint16_t> a{narrow(d, 7.f), narrow(d, 1.f), narrow(d, -3.f)};
  divideInPlace(BufferView{a.data(), a.size(), d, Device::cpu()}, 3);
  EXPECT_EQ(a[0], narrow(d, 7.f / 3.f));
  EXPECT_EQ(a[1], narrow(d, 1.f / 3.f));
  EXPECT_EQ(a[2], narrow(d, -1.f));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HalfReduceTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

TEST(HalfReduceCpuTest, VectorPathReportsCpuSupport) {
  // On x86-64 machines with F16C and AVX2 (every machine this project targets) the fast path
  // must be in use; elsewhere the scalar path is, and the equality test above still holds.
  __builtin_cpu_init();
  EXPECT_EQ(halfReduceVectorised(), __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2"));
}

TEST(ReduceKernelsTest, IntegerAverageTruncatesTowardZero) {
  std::vector<int32_t> v{7, -7, 2};
  divideInPlace(viewOf(v.data(), v.size()), 2);
  EXPECT_EQ(v, (std::vector<int32_t>{3, -3, 1}));
}

}  // namespace
}  // namespace ddp::comm
