#include "worker/optim/dfa_layout.h"

#include <gtest/gtest.h>

namespace ddp::optim {
namespace {

TEST(DfaLayoutTest, ReverseOrderBucketsAlignedShardsNoSplit) {
  // Positions 0..4 with sizes; packed from the last: 4(10) 3(50) | 2(70) | 1(5) 0(20)
  auto l = planDfaLayout({20, 5, 70, 50, 10}, 3, 64);
  ASSERT_EQ(l.buckets.size(), 3u);
  EXPECT_EQ(l.buckets[0].params, (std::vector<size_t>{4, 3}));
  EXPECT_EQ(l.buckets[0].offsets, (std::vector<size_t>{0, 10}));
  EXPECT_EQ(l.buckets[1].params, std::vector<size_t>{2});  // bigger than the cap: alone
  EXPECT_EQ(l.buckets[2].params, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(l.bucketOf, (std::vector<size_t>{2, 2, 1, 0, 0}));
  EXPECT_EQ(l.offsetOf, (std::vector<size_t>{5, 0, 0, 10, 0}));
  for (const auto& b : l.buckets) {
    EXPECT_EQ(b.shardElems % kDfaShardAlignElems, 0u);
    EXPECT_GE(b.paddedElems(), b.usedElems);
    EXPECT_LT(b.paddedElems() - b.usedElems, 3 * kDfaShardAlignElems);
  }
  EXPECT_EQ(l.buckets[0].usedElems, 60u);
  EXPECT_EQ(l.shardElemsTotal(), 32u * 3);
}

TEST(DfaLayoutTest, SingleBucketAndEmptyModel) {
  auto l = planDfaLayout({3, 4}, 2, 1000);
  ASSERT_EQ(l.buckets.size(), 1u);
  EXPECT_EQ(l.buckets[0].usedElems, 7u);
  EXPECT_EQ(l.buckets[0].paddedElems(), 64u);
  EXPECT_TRUE(planDfaLayout({}, 4, 10).buckets.empty());
}

}  // namespace
}  // namespace ddp::optim
