// Bucket pack / unpack / scale / axpby on the CPU against element-by-element references.
#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace ddp::kernels {
namespace {

TEST(BucketOpsTest, PackUnpackRoundTripWithScale) {
  // Sizes 0, 1, odd and a larger one, back to back.
  std::vector<std::vector<float>> grads = {{}, {1.5f}, {1, 2, 3, 4, 5, 6, 7}, std::vector<float>(1000)};
  std::iota(grads[3].begin(), grads[3].end(), -500.0f);
  std::vector<FlatView> views;
  size_t total = 0;
  for (auto& g : grads) {
    views.push_back({g.data(), g.size()});
    total += g.size();
  }
  std::vector<float> bucket(total + 3, -1.0f);
  ASSERT_TRUE(packBucket({bucket.data(), bucket.size()}, views, 0.25).isOk());
  size_t off = 0;
  for (auto& g : grads) {
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(bucket[off + i], g[i] * 0.25f);
    off += g.size();
  }
  EXPECT_EQ(bucket[total], -1.0f);  // the tail is untouched
  std::vector<std::vector<float>> out;
  std::vector<FlatView> outViews;
  for (auto& g : grads) out.emplace_back(g.size(), 0.0f);
  for (auto& o : out) outViews.push_back({o.data(), o.size()});
  ASSERT_TRUE(unpackBucket({bucket.data(), bucket.size()}, outViews, 4.0).isOk());
  for (size_t k = 0; k < grads.size(); ++k) EXPECT_EQ(out[k], grads[k]);
}

TEST(BucketOpsTest, PackIntoHalfBucketRounds) {
  std::vector<float> g = {1.0f, 1.0f / 3.0f, 1000.25f};
  std::vector<uint16_t> bucket(3);
  ASSERT_TRUE(packBucket({bucket.data(), 3, DType::kF16}, {{g.data(), 3}}, 1.0).isOk());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket[i], floatToHalf(g[i]));
  std::vector<double> back(3);
  ASSERT_TRUE(unpackBucket({bucket.data(), 3, DType::kF16}, {{back.data(), 3, DType::kF64}}).isOk());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back[i], static_cast<double>(halfToFloat(bucket[i])));
}

TEST(BucketOpsTest, PackRejectsOverflowingGradients) {
  std::vector<float> g(5), bucket(4);
  Status st = packBucket({bucket.data(), 4}, {{g.data(), 5}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bucket only 4"), std::string::npos) << st;
}

TEST(BucketOpsTest, AxpbyAllDtypesAndAlphaZeroIgnoresGarbage) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const size_t n = 3000;
    std::vector<float> src(n), dst0(n);
    for (size_t i = 0; i < n; ++i) {
      src[i] = static_cast<float>(i % 17) - 8.0f;
      dst0[i] = static_cast<float>(i % 5);
    }
    std::vector<char> dst(n * dtypeSize(dt));
    FlatView dv{dst.data(), n, dt};
    ASSERT_TRUE(castScaled(dv, {dst0.data(), n}).isOk());
    ASSERT_TRUE(axpby(dv, 2.0, {src.data(), n}, 0.5).isOk());
    std::vector<double> got(n);
    ASSERT_TRUE(castScaled({got.data(), n, DType::kF64}, dv).isOk());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0 * dst0[i] + 0.5 * src[i]) << dtypeName(dt) << " " << i;
    // alpha = 0: NaN in dst must not leak.
    std::vector<float> nans(n, std::nanf(""));
    ASSERT_TRUE(castScaled(dv, {nans.data(), n}).isOk());
    ASSERT_TRUE(axpby(dv, 0.0, {src.data(), n}, 1.0).isOk());
    ASSERT_TRUE(castScaled({got.data(), n, DType::kF64}, dv).isOk());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], src[i]);
  }
}

TEST(BucketOpsTest, ScaleAndZero) {
  std::vector<uint16_t> b(9);
  for (int i = 0; i < 9; ++i) b[i] = floatToBf16(static_cast<float>(i));
  ASSERT_TRUE(scaleInPlace({b.data(), 9, DType::kBF16}, 0.5).isOk());
  for (int i = 0; i < 9; ++i) EXPECT_EQ(bf16ToFloat(b[i]), i * 0.5f);
  ASSERT_TRUE(fillZero({b.data(), 9, DType::kBF16}).isOk());
  for (int i = 0; i < 9; ++i) EXPECT_EQ(b[i], 0);
  std::vector<int64_t> ints(2);
  EXPECT_EQ(fillZero({ints.data(), 2, DType::kI64}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::kernels
