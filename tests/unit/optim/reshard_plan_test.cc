// The resharding planner (Note [Reshard plan]) for every N -> M in 1..5 x 1..5 over ZeRO-1,
// DistributedFusedAdam (several bucket caps) and stream layouts, with parameters of 0, 1, odd
// and large sizes. Oracle: carrying the plan out on shards whose elements name their own
// (parameter, element) must give every new rank exactly the elements its layout says, each
// written once.
#include "worker/optim/reshard_plan.h"

#include <gtest/gtest.h>

#include <numeric>
#include <utility>

#include "worker/optim/dfa_layout.h"
#include "worker/optim/zero_partition.h"

namespace ddp::optim {
namespace {

using Elem = std::pair<size_t, size_t>;  // (parameter, element)
constexpr Elem kUnset{SIZE_MAX, SIZE_MAX};

const std::vector<std::vector<size_t>> kModels{
    {31, 7, 0, 64, 13, 5, 40, 1},  // no world size divides the total
    {1},
    {0},
    {0, 0, 3},
    {4099, 1, 777, 0, 2048, 33},  // large and odd
    {},
};

// Each rank's flat shard filled with the (parameter, element) its layout puts there.
std::vector<std::vector<Elem>> fill(const ShardLayout& l) {
  std::vector<std::vector<Elem>> shards(static_cast<size_t>(l.worldSize));
  for (int r = 0; r < l.worldSize; ++r) shards[static_cast<size_t>(r)].assign(l.shardElems(r), kUnset);
  for (const ShardRun& run : l.runs) {
    for (size_t k = 0; k < run.count; ++k) {
      shards[static_cast<size_t>(run.rank)][run.shardOffset + k] = {run.param, run.paramOffset + k};
    }
  }
  return shards;
}

// Carries the plan out and checks the result against the new layout.
void checkPlan(const ShardLayout& from, const ShardLayout& to, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(from.validate().isOk()) << from.validate();
  ASSERT_TRUE(to.validate().isOk()) << to.validate();
  auto plan = planReshard(from, to);
  ASSERT_TRUE(plan.isOk()) << plan.status();
  ASSERT_EQ(plan->size(), static_cast<size_t>(to.worldSize));
  const auto oldShards = fill(from);
  const auto want = fill(to);
  std::vector<std::vector<Elem>> got(want.size());
  std::vector<std::vector<int>> writes(want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    got[r].assign(want[r].size(), kUnset);
    writes[r].assign(want[r].size(), 0);
  }
  size_t moved = 0, emptyParamMoves = 0;
  for (int r = 0; r < to.worldSize; ++r) {
    const auto& moves = (*plan)[static_cast<size_t>(r)];
    for (size_t j = 0; j < moves.size(); ++j) {
      const ReshardMove& m = moves[j];
      EXPECT_EQ(m.toRank, r);
      if (j > 0) EXPECT_LE(moves[j - 1].toOffset, m.toOffset) << "moves ascend in the new shard";
      if (m.count == 0) {
        ++emptyParamMoves;
        EXPECT_EQ(from.numels[m.param], 0u);
        continue;
      }
      const auto& src = oldShards[static_cast<size_t>(m.fromRank)];
      ASSERT_LE(m.fromOffset + m.count, src.size());
      ASSERT_LE(m.toOffset + m.count, got[static_cast<size_t>(r)].size());
      for (size_t k = 0; k < m.count; ++k) {
        EXPECT_EQ(src[m.fromOffset + k], Elem(m.param, m.paramOffset + k)) << "the move names what it carries";
        got[static_cast<size_t>(r)][m.toOffset + k] = src[m.fromOffset + k];
        ++writes[static_cast<size_t>(r)][m.toOffset + k];
      }
      moved += m.count;
    }
    // planReshardTo gives the same moves for one rank.
    auto one = planReshardTo(from, to, r);
    ASSERT_TRUE(one.isOk());
    EXPECT_EQ(*one, moves);
  }
  const size_t total = std::accumulate(from.numels.begin(), from.numels.end(), size_t{0});
  EXPECT_EQ(moved, total) << "every element moved once";
  EXPECT_EQ(emptyParamMoves, static_cast<size_t>(std::count(from.numels.begin(), from.numels.end(), size_t{0})));
  for (size_t r = 0; r < want.size(); ++r) {
    for (size_t k = 0; k < want[r].size(); ++k) {
      if (want[r][k] == kUnset) continue;  // padding
      EXPECT_EQ(got[r][k], want[r][k]) << "rank " << r << " offset " << k;
      EXPECT_EQ(writes[r][k], 1) << "rank " << r << " offset " << k;
    }
  }
}

TEST(ReshardPlanTest, ZeroToZeroEveryNToMMovesWholeParametersFromTheirOldOwner) {
  for (const auto& numels : kModels) {
    for (int n = 1; n <= 5; ++n) {
      for (int m = 1; m <= 5; ++m) {
        const ShardLayout from = zeroShardLayout(numels, n), to = zeroShardLayout(numels, m);
        checkPlan(from, to, "zero " + std::to_string(n) + " -> " + std::to_string(m));
        auto plan = planReshard(from, to);
        ASSERT_TRUE(plan.isOk());
        const std::vector<int> oldOwners = partitionParameters(numels, n), newOwners = partitionParameters(numels, m);
        size_t moves = 0;
        for (const auto& rank : *plan) {
          for (const ReshardMove& mv : rank) {
            ++moves;
            EXPECT_EQ(mv.count, numels[mv.param]) << "ZeRO never splits a parameter";
            EXPECT_EQ(mv.fromRank, oldOwners[mv.param]);
            EXPECT_EQ(mv.toRank, newOwners[mv.param]);
          }
        }
        EXPECT_EQ(moves, numels.size());
      }
    }
  }
}

TEST(ReshardPlanTest, DfaToDfaEveryNToMWithSeveralBucketCaps) {
  for (const auto& numels : kModels) {
    for (size_t cap : {size_t{1}, size_t{64}, size_t{100}, size_t{5000}}) {
      for (int n = 1; n <= 5; ++n) {
        for (int m = 1; m <= 5; ++m) {
          const ShardLayout from = dfaShardLayout(planDfaLayout(numels, n, cap), numels, n);
          const ShardLayout to = dfaShardLayout(planDfaLayout(numels, m, cap * 2), numels, m);
          checkPlan(from, to, "dfa cap " + std::to_string(cap) + " " + std::to_string(n) + " -> " + std::to_string(m));
        }
      }
    }
  }
}

TEST(ReshardPlanTest, StreamToDfaAndZeroToDfaAndBack) {
  for (const auto& numels : kModels) {
    std::vector<size_t> reversed(numels.size());
    std::iota(reversed.rbegin(), reversed.rend(), size_t{0});
    const ShardLayout stream = streamLayout(reversed, numels);
    for (int m = 1; m <= 5; ++m) {
      const ShardLayout dfa = dfaShardLayout(planDfaLayout(numels, m, 100), numels, m);
      checkPlan(stream, dfa, "stream -> dfa " + std::to_string(m));
      checkPlan(dfa, stream, "dfa " + std::to_string(m) + " -> stream");
      checkPlan(zeroShardLayout(numels, m), dfa, "zero -> dfa " + std::to_string(m));
    }
  }
}

TEST(ReshardPlanTest, DfaFourToThreeSplitsAParameterAcrossOldShardsByHand) {
  // One bucket of 200 elements (params 1 then 0, reverse order): at world 4 the shards hold 64
  // elements (50 used each, aligned up), at world 3 they hold 96 (67 per rank, aligned up).
  const std::vector<size_t> numels{120, 80};
  const ShardLayout from = dfaShardLayout(planDfaLayout(numels, 4, 1000), numels, 4);
  const ShardLayout to = dfaShardLayout(planDfaLayout(numels, 3, 1000), numels, 3);
  auto plan = planReshardTo(from, to, 1);  // new rank 1: bucket elements [96, 192)
  ASSERT_TRUE(plan.isOk()) << plan.status();
  // Old shards: rank 0 [0, 64) holds param 1 [0, 64); rank 1 [64, 128): param 1 [64, 80) then
  // param 0 [0, 48); rank 2 [128, 192): param 0 [48, 112); rank 3 [192, 200): param 0 [112, 120).
  const std::vector<ReshardMove> want{
      {1, 32, 1, 0, 32, 0, 16},   // bucket [96, 128): param 0 [16, 48) from old rank 1 offset 32
      {2, 0, 1, 32, 64, 0, 48},   // bucket [128, 192): param 0 [48, 112) from old rank 2 offset 0
  };
  EXPECT_EQ(*plan, want);
  EXPECT_EQ(sourceRanks(*plan), (std::vector<int>{1, 2}));
}

TEST(ReshardPlanTest, RejectsLayoutsOfDifferentModelsAndBrokenLayouts) {
  EXPECT_EQ(planReshard(zeroShardLayout({3, 4}, 2), zeroShardLayout({3, 5}, 2)).status().code(),
            StatusCode::kInvalidArgument);
  ShardLayout gap = zeroShardLayout({3, 4}, 2);
  gap.runs[1].count = 3;  // element 3 of parameter 1 not covered
  EXPECT_EQ(gap.validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(planReshard(gap, zeroShardLayout({3, 4}, 1)).status().code(), StatusCode::kInvalidArgument);
  ShardLayout overlap = streamLayout({0, 1}, {3, 4});
  overlap.runs[1].shardOffset = 2;  // overlaps parameter 0 in rank 0's shard
  EXPECT_EQ(overlap.validate().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(planReshardTo(zeroShardLayout({3}, 2), zeroShardLayout({3}, 2), 2).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::optim
