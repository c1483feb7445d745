#include "worker/optim/dfa_layout.h"

#include <gtest/gtest.h>

#include <algorithm>

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

// Oracle: each element's flag from the parameter holding it (padding: the element before it, or
// decaying when the shard is all padding), runs rebuilt element by element.
std::vector<DfaDecayRun> runsByElement(const DfaBucket& b, int rank, const std::vector<bool>& decay) {
  std::vector<int> flag(b.paddedElems(), -1);
  for (size_t k = 0; k < b.params.size(); ++k) {
    const size_t end = k + 1 < b.params.size() ? b.offsets[k + 1] : b.usedElems;
    for (size_t e = b.offsets[k]; e < end; ++e) flag[e] = decay[b.params[k]] ? 1 : 0;
  }
  std::vector<DfaDecayRun> runs;
  const size_t lo = static_cast<size_t>(rank) * b.shardElems;
  for (size_t e = lo; e < lo + b.shardElems; ++e) {
    bool d = flag[e] < 0 ? (runs.empty() || runs.back().decay) : flag[e] == 1;
    if (!runs.empty() && runs.back().decay == d) {
      ++runs.back().count;
    } else {
      runs.push_back({e - lo, 1, d});
    }
  }
  return runs;
}

bool sameRuns(const std::vector<DfaDecayRun>& a, const std::vector<DfaDecayRun>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const DfaDecayRun& x, const DfaDecayRun& y) {
    return x.offset == y.offset && x.count == y.count && x.decay == y.decay;
  });
}

// Parameters straddle the shard boundaries (uneven at 2 and 3 ranks), one is empty, and the last
// shard of a bucket may be padding only.
TEST(DfaLayoutTest, DecayRunsFollowEachParametersMaskAcrossShards) {
  const std::vector<size_t> numels{70, 1, 0, 45, 33, 64, 5, 128};
  const std::vector<bool> decay{true, false, true, true, false, false, true, false};
  for (int world = 1; world <= 4; ++world) {
    for (size_t cap : {size_t{40}, size_t{150}, size_t{1000}}) {
      const DfaLayout l = planDfaLayout(numels, world, cap);
      for (const DfaBucket& b : l.buckets) {
        for (int r = 0; r < world; ++r) {
          SCOPED_TRACE("world " + std::to_string(world) + " cap " + std::to_string(cap) + " rank " + std::to_string(r));
          const auto runs = dfaDecayRuns(b, r, decay);
          EXPECT_TRUE(sameRuns(runs, runsByElement(b, r, decay)));
          size_t covered = 0;
          for (const auto& run : runs) covered += run.count;
          EXPECT_EQ(covered, b.shardElems);
        }
      }
    }
  }
  // Spelled out: one bucket [p1(3, no) p0(5, yes)] over 2 ranks of 32: rank 0 runs 0-2 no, 3-31
  // yes (padding after p0 joins it); rank 1 is padding only.
  const DfaLayout one = planDfaLayout({5, 3}, 2, 100);
  const auto r0 = dfaDecayRuns(one.buckets[0], 0, {true, false});
  ASSERT_EQ(r0.size(), 2u);
  EXPECT_EQ(r0[0].offset, 0u);
  EXPECT_EQ(r0[0].count, 3u);
  EXPECT_FALSE(r0[0].decay);
  EXPECT_EQ(r0[1].count, 29u);
  EXPECT_TRUE(r0[1].decay);
  const auto r1 = dfaDecayRuns(one.buckets[0], 1, {true, false});
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].count, 32u);
}

}  // namespace
}  // namespace ddp::optim
