// Checks the vectorised CPU casts against the scalar converters in common/dtype.h (the
// reference), including values that round, overflow, go subnormal, and odd lengths that hit the
// vector tails.
#include "kernels/cast_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ddp::kernels {
namespace {

std::vector<float> testValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  const float specials[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e6f, -1e6f, 6.0e-8f, 3.0e-5f, 1e-30f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            1.00048828125f /* halfway between two halves */, 1.0f + 1.0f / 256.0f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float) && i < n; ++i) v[i * 3 % n] = specials[i];
  return v;
}

class CastSizes : public ::testing::TestWithParam<size_t> {};

TEST_P(CastSizes, HalfRoundTripMatchesScalarReference) {
  const size_t n = GetParam();
  auto src = testValues(n, 1);
  for (float scale : {1.0f, 0.25f, 3.0f}) {
    std::vector<uint16_t> h(n);
    floatToHalfN(src.data(), h.data(), n, scale);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], floatToHalf(src[i] * scale)) << "i=" << i << " x=" << src[i];
    std::vector<float> back(n);
    halfToFloatN(h.data(), back.data(), n, scale);
    for (size_t i = 0; i < n; ++i) {
      const float want = halfToFloat(h[i]) * scale;
      if (std::isnan(want)) ASSERT_TRUE(std::isnan(back[i]));
      else ASSERT_EQ(back[i], want) << "i=" << i;
    }
  }
}

TEST_P(CastSizes, Bf16RoundTripMatchesScalarReference) {
  const size_t n = GetParam();
  auto src = testValues(n, 2);
  if (n > 5) src[5] = std::numeric_limits<float>::quiet_NaN();
  for (float scale : {1.0f, 0.5f}) {
    std::vector<uint16_t> b(n);
    floatToBf16N(src.data(), b.data(), n, scale);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], floatToBf16(src[i] * scale)) << "i=" << i;
    std::vector<float> back(n);
    bf16ToFloatN(b.data(), back.data(), n, scale);
    for (size_t i = 0; i < n; ++i) {
      const float want = bf16ToFloat(b[i]) * scale;
      if (std::isnan(want)) ASSERT_TRUE(std::isnan(back[i]));
      else ASSERT_EQ(back[i], want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, CastSizes, ::testing::Values(size_t{1}, size_t{7}, size_t{8}, size_t{33}, size_t{4099}));

TEST(CastScaledTest, EveryDtypePairAgainstDoubleReference) {
  const DType types[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
  const size_t n = 2500;  // more than one internal chunk
  auto base = testValues(n, 3);
  for (auto& x : base) x = std::isfinite(x) ? std::fmod(x, 100.0f) : 7.0f;  // stay inside half range
  auto encode = [](DType t, const std::vector<float>& v) {
    std::vector<char> out(v.size() * dtypeSize(t));
    for (size_t i = 0; i < v.size(); ++i) {
      switch (t) {
        case DType::kF32: reinterpret_cast<float*>(out.data())[i] = v[i]; break;
        case DType::kF64: reinterpret_cast<double*>(out.data())[i] = v[i]; break;
        case DType::kF16: reinterpret_cast<uint16_t*>(out.data())[i] = floatToHalf(v[i]); break;
        default: reinterpret_cast<uint16_t*>(out.data())[i] = floatToBf16(v[i]); break;
      }
    }
    return out;
  };
  auto decode = [](DType t, const char* p, size_t i) -> double {
    switch (t) {
      case DType::kF32: return reinterpret_cast<const float*>(p)[i];
      case DType::kF64: return reinterpret_cast<const double*>(p)[i];
      case DType::kF16: return halfToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
      default: return bf16ToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    }
  };
  for (DType st : types) {
    auto src = encode(st, base);
    for (DType dt : types) {
      std::vector<char> dst(n * dtypeSize(dt));
      ASSERT_TRUE(castScaled({dst.data(), n, dt}, {src.data(), n, st}, 0.5).isOk());
      // Relative tolerance of the narrower type (half: 2^-11, bf16: 2^-8).
      const double tol = (dt == DType::kBF16 || st == DType::kBF16) ? 1.0 / 128 :
                         (dt == DType::kF16 || st == DType::kF16) ? 1.0 / 1024 : 1e-6;
      for (size_t i = 0; i < n; ++i) {
        const double want = decode(st, src.data(), i) * 0.5;
        ASSERT_NEAR(decode(dt, dst.data(), i), want, tol * std::fabs(want) + 1e-6)
            << dtypeName(st) << " -> " << dtypeName(dt) << " i=" << i;
      }
    }
  }
}

TEST(CastScaledTest, InPlaceScaleAndBadArguments) {
  std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(castScaled({v.data(), 3}, {v.data(), 3}, 2.0).isOk());
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  std::vector<uint16_t> h(2);
  EXPECT_EQ(castScaled({h.data(), 2, DType::kF16}, {v.data(), 3}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(castScaled({v.data(), 3, DType::kF16}, {v.data(), 3}).code(), StatusCode::kInvalidArgument);
  std::vector<int32_t> ints(3);
  EXPECT_EQ(castScaled({ints.data(), 3, DType::kI32}, {v.data(), 3}).code(), StatusCode::kInvalidArgument);
#if !DDP_WITH_CUDA
  EXPECT_EQ(castScaled({v.data(), 3, DType::kF32, Device::cuda(0)}, {v.data(), 3, DType::kF32, Device::cuda(0)}).code(),
            StatusCode::kUnimplemented);
#endif
}

}  // namespace
}  // namespace ddp::kernels
