// DistributedSampler: identical permutations on all ranks, disjoint cover, pad / drop-last /
// uneven counts, epoch reshuffle, resumable position; BatchIterator batches.
#include "worker/data/distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "worker/data/batch_iterator.h"
#include "worker/data/synthetic_dataset.h"

namespace ddp::data {
namespace {

DistributedSampler make(int64_t n, int rank, int world, SamplerMode mode, uint64_t seed = 7,
                        std::vector<int64_t> counts = {}) {
  SamplerConfig c{.datasetSize = n, .rank = rank, .worldSize = world, .shuffle = true,
                  .seed = seed, .mode = mode, .unevenCounts = std::move(counts)};
  auto s = DistributedSampler::create(c);
  EXPECT_TRUE(s.isOk()) << s.status();
  return std::move(s).value();
}

class SamplerWorldTest : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(SamplerWorldTest, PadGivesEqualCountsCoveringEverySample) {
  auto [world, n] = GetParam();
  std::multiset<int64_t> seen;
  const int64_t per = (n + world - 1) / world;
  for (int r = 0; r < world; ++r) {
    auto s = make(n, r, world, SamplerMode::kPad);
    s.setEpoch(3);
    EXPECT_EQ(s.numSamples(), per);
    seen.insert(s.indices().begin(), s.indices().end());
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), per * world);
  for (int64_t i = 0; i < n; ++i) EXPECT_GE(seen.count(i), 1u) << i;
  // Padding repeats exactly per*world - n samples once more.
  int64_t dup = 0;
  for (int64_t i = 0; i < n; ++i) dup += static_cast<int64_t>(seen.count(i)) - 1;
  EXPECT_EQ(dup, per * world - n);
}

TEST_P(SamplerWorldTest, DropLastGivesDisjointEqualShares) {
  auto [world, n] = GetParam();
  std::set<int64_t> seen;
  for (int r = 0; r < world; ++r) {
    auto s = make(n, r, world, SamplerMode::kDropLast);
    EXPECT_EQ(s.numSamples(), n / world);
    for (int64_t i : s.indices()) EXPECT_TRUE(seen.insert(i).second) << "duplicate " << i;
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), n / world * world);
}

TEST_P(SamplerWorldTest, UnevenCoversEachSampleOnceWithCountsDifferingByOne) {
  auto [world, n] = GetParam();
  std::set<int64_t> seen;
  for (int r = 0; r < world; ++r) {
    auto s = make(n, r, world, SamplerMode::kUneven);
    EXPECT_EQ(s.numSamples(), n / world + (r < n % world ? 1 : 0));
    for (int64_t i : s.indices()) EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), n);
}

INSTANTIATE_TEST_SUITE_P(Worlds, SamplerWorldTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values<int64_t>(0, 1, 7, 100)));

TEST(DistributedSamplerTest, PermutationIsSharedAcrossRanksAndChangesWithEpoch) {
  // Rank r's list is positions r, r+W, ... of one shared permutation.
  const int64_t n = 50;
  auto perm = DistributedSampler::permutation(n, 7, 2, true);
  for (int r = 0; r < 3; ++r) {
    auto s = make(n, r, 3, SamplerMode::kPad);
    s.setEpoch(2);
    for (int64_t k = 0; k < s.numSamples(); ++k) EXPECT_EQ(s.indices()[k], perm[(r + 3 * k) % n]);
  }
  EXPECT_NE(perm, DistributedSampler::permutation(n, 7, 3, true));
  EXPECT_NE(perm, DistributedSampler::permutation(n, 8, 2, true));
  EXPECT_EQ(perm, DistributedSampler::permutation(n, 7, 2, true));
  auto sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, DistributedSampler::permutation(n, 7, 2, false));
}

TEST(DistributedSamplerTest, ExplicitUnevenCounts) {
  std::set<int64_t> seen;
  std::vector<int64_t> counts = {10, 3, 0, 6};
  for (int r = 0; r < 4; ++r) {
    auto s = make(20, r, 4, SamplerMode::kUneven, 1, counts);
    EXPECT_EQ(s.numSamples(), counts[r]);
    for (int64_t i : s.indices()) EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(seen.size(), 19u);
  SamplerConfig bad{.datasetSize = 10, .rank = 0, .worldSize = 2, .mode = SamplerMode::kUneven,
                    .unevenCounts = {6, 6}};
  EXPECT_EQ(DistributedSampler::create(bad).status().code(), StatusCode::kInvalidArgument);
  bad.unevenCounts = {1};
  EXPECT_EQ(DistributedSampler::create(bad).status().code(), StatusCode::kInvalidArgument);
  bad = {.datasetSize = 10, .rank = 2, .worldSize = 2};
  EXPECT_EQ(DistributedSampler::create(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(DistributedSamplerTest, ResumesFromSavedPosition) {
  auto a = make(37, 1, 2, SamplerMode::kPad);
  a.setEpoch(5);
  a.next(4);
  a.next(4);
  SamplerState saved = a.state();
  EXPECT_EQ(saved, (SamplerState{5, 8, 0, 16}));  // 2 ranks x 8 consumed
  auto bytes = saved.serialize();
  auto restoredState = SamplerState::deserialize(bytes);
  ASSERT_TRUE(restoredState.isOk());
  auto b = make(37, 1, 2, SamplerMode::kPad);  // fresh sampler at epoch 0
  ASSERT_TRUE(b.restore(*restoredState).isOk());
  EXPECT_EQ(b.next(100), a.next(100));
  EXPECT_TRUE(a.next(1).empty());
  EXPECT_EQ(b.restore({5, 1000}).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(SamplerState::deserialize(bytes.substr(0, 5)).status().code(), StatusCode::kDataLoss);
  // A state saved before the elastic fields (epoch, position only) still loads.
  auto legacy = SamplerState::deserialize(bytes.substr(0, 16));
  ASSERT_TRUE(legacy.isOk());
  EXPECT_EQ(*legacy, (SamplerState{5, 8, 0, -1}));
  auto c = make(37, 1, 2, SamplerMode::kPad);
  ASSERT_TRUE(c.restore(*legacy, 2).isOk());
  EXPECT_EQ(c.state(), saved);
}

// Note [Elastic sampler]: an epoch read by `worlds[i]` ranks for `steps[i]` steps each (the last
// segment to the epoch's end), each rank reading `shares[i][r]` samples per step. Returns every
// index read, in order. The state handed from one segment to the next is rank 0's, through
// serialize / deserialize, as a checkpoint or a healing peer carries it.
struct Segment {
  std::vector<int64_t> shares;  // one per rank
  int64_t steps;                // -1: to the end of the epoch
};

std::vector<int64_t> readElastic(int64_t n, SamplerMode mode, const std::vector<Segment>& segments,
                                 std::vector<int64_t>* blockTotals = nullptr) {
  std::vector<int64_t> read;
  std::string carried;
  for (const Segment& seg : segments) {
    const int world = static_cast<int>(seg.shares.size());
    const bool equal = std::all_of(seg.shares.begin(), seg.shares.end(), [&](int64_t b) { return b == seg.shares[0]; });
    std::vector<DistributedSampler> ranks;
    for (int r = 0; r < world; ++r) {
      SamplerConfig c{.datasetSize = n, .rank = r, .worldSize = world, .shuffle = true, .seed = 11, .mode = mode};
      if (!equal) c.shares = seg.shares;
      auto s = DistributedSampler::create(c);
      EXPECT_TRUE(s.isOk()) << s.status();
      ranks.push_back(std::move(s).value());
      ranks.back().setEpoch(2);
      if (!carried.empty()) {
        auto st = SamplerState::deserialize(carried);
        EXPECT_TRUE(st.isOk());
        EXPECT_TRUE(ranks.back().restore(*st).isOk());
      }
    }
    for (int64_t k = 0; seg.steps < 0 || k < seg.steps; ++k) {
      const bool more = ranks[0].remaining() > 0;
      for (int r = 0; r < world; ++r) EXPECT_EQ(ranks[r].remaining() > 0, more) << "rank " << r << " step " << k;
      if (!more) break;
      int64_t stepTotal = 0;
      for (int r = 0; r < world; ++r) {
        auto idx = ranks[r].next(seg.shares[r]);
        stepTotal += static_cast<int64_t>(idx.size());
        read.insert(read.end(), idx.begin(), idx.end());
        if (r > 0) EXPECT_EQ(ranks[r].blockTotal(), ranks[0].blockTotal());
      }
      EXPECT_EQ(ranks[0].blockTotal(), stepTotal) << "step " << k;
      if (blockTotals) blockTotals->push_back(ranks[0].blockTotal());
    }
    for (int r = 1; r < world; ++r) EXPECT_EQ(ranks[r].state().consumed, ranks[0].state().consumed);
    carried = ranks[0].state().serialize();
  }
  return read;
}

// Each index of [0, n) read once, plus `padded` repeats at most.
void expectEachOnce(const std::vector<int64_t>& read, int64_t n, int64_t padded) {
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t i : read) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, n);
    ++count[static_cast<size_t>(i)];
  }
  int64_t extra = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GE(count[static_cast<size_t>(i)], 1) << "sample " << i << " skipped";
    extra += count[static_cast<size_t>(i)] - 1;
  }
  EXPECT_LE(extra, padded);
}

TEST(ElasticSamplerTest, FourToThreeToFourMidEpochReadsEverySampleOnce) {
  const int64_t n = 1000;  // 4 x 8 = 32 per step
  auto read = readElastic(n, SamplerMode::kPad, {{{8, 8, 8, 8}, 5}, {{8, 8, 8}, 7}, {{8, 8, 8, 8}, -1}});
  // 160 + 168 consumed before the last segment; its 672 divide by 4: no padding at all.
  EXPECT_EQ(static_cast<int64_t>(read.size()), n);
  expectEachOnce(read, n, 0);
}

TEST(ElasticSamplerTest, KeptGlobalBatchSplitsUnevenlyInBlocks) {
  const int64_t n = 997;
  // Global batch 32: 4 x 8, then 3 ranks with 11, 11, 10 (block layout), then 4 x 8 again.
  std::vector<int64_t> totals;
  auto read = readElastic(n, SamplerMode::kPad, {{{8, 8, 8, 8}, 3}, {{11, 11, 10}, 10}, {{8, 8, 8, 8}, -1}}, &totals);
  for (size_t k = 0; k + 1 < totals.size(); ++k) EXPECT_EQ(totals[k], 32) << "step " << k;
  expectEachOnce(read, n, 3);  // the last segment (997 - 416 = 581) pads to a multiple of 4
  // Ends in the block layout: the last block is split by the rounding rule.
  std::vector<int64_t> blockTotals;
  auto read2 = readElastic(n, SamplerMode::kPad, {{{8, 8, 8, 8}, 3}, {{11, 11, 10}, -1}}, &blockTotals);
  expectEachOnce(read2, n, 2);
  EXPECT_EQ(static_cast<int64_t>(read2.size()), n);  // 901 = 28 x 32 + 5: the last block has 5 >= 3
  EXPECT_EQ(blockTotals.back(), 5);
}

TEST(ElasticSamplerTest, ShortLastBlockIsPaddedOrDropped) {
  // 3 ranks with shares 2, 1, 1 (block 4) over 10 positions: 2 full blocks and a last block of 2
  // < 3 ranks: kPad pads it to 3, kDropLast drops it.
  auto padded = readElastic(10, SamplerMode::kPad, {{{2, 1, 1}, -1}});
  EXPECT_EQ(padded.size(), 11u);
  expectEachOnce(padded, 10, 1);
  auto dropped = readElastic(10, SamplerMode::kDropLast, {{{2, 1, 1}, -1}});
  EXPECT_EQ(dropped.size(), 8u);
  EXPECT_EQ(std::set<int64_t>(dropped.begin(), dropped.end()).size(), 8u);
}

TEST(ElasticSamplerTest, DropLastAcrossAChangeNeverRepeats) {
  const int64_t n = 301;
  auto read = readElastic(n, SamplerMode::kDropLast, {{{5, 5}, 7}, {{5, 5, 5}, -1}});
  EXPECT_EQ(std::set<int64_t>(read.begin(), read.end()).size(), read.size());
  EXPECT_GE(static_cast<int64_t>(read.size()), n - 2);  // at most the last world's remainder dropped
}

TEST(ElasticSamplerTest, SameLayoutRestoreContinuesBitwiseAndFinishedEpochStaysFinished) {
  auto a = make(50, 1, 3, SamplerMode::kPad);
  a.setEpoch(1);
  a.next(4);
  auto b = make(50, 1, 3, SamplerMode::kPad);
  ASSERT_TRUE(b.restore(a.state()).isOk());
  EXPECT_EQ(b.next(100), a.next(100));
  EXPECT_EQ(a.state().consumed, 50);
  auto c = make(50, 0, 2, SamplerMode::kPad);  // another world size, epoch done: nothing left
  ASSERT_TRUE(c.restore(a.state()).isOk());
  EXPECT_EQ(c.remaining(), 0);
  EXPECT_EQ(c.epoch(), 1u);
}

TEST(ElasticSamplerTest, SharesAreValidated) {
  SamplerConfig bad{.datasetSize = 10, .rank = 0, .worldSize = 2};
  bad.shares = {1};
  EXPECT_EQ(DistributedSampler::create(bad).status().code(), StatusCode::kInvalidArgument);
  bad.shares = {1, 0};
  EXPECT_EQ(DistributedSampler::create(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(BatchIteratorTest, BatchesCopyTheSampledRowsAndHonourDropLast) {
  SyntheticConfig cfg{.samples = 10, .sampleShape = {3}, .classes = 4, .seed = 2};
  Dataset d = makeSyntheticDataset(cfg).value();
  for (bool dropLast : {false, true}) {
    auto s = make(10, 0, 1, SamplerMode::kPad);
    BatchIterator it(d, s, 4, dropLast);
    EXPECT_EQ(it.batchesPerEpoch(), dropLast ? 2 : 3);
    Batch b;
    std::vector<int> sizes;
    int64_t pos = 0;
    while (it.next(&b)) {
      sizes.push_back(b.size);
      for (int i = 0; i < b.size; ++i, ++pos) {
        const int64_t idx = s.indices()[pos];
        EXPECT_EQ(b.labels[i], d.labels[idx]);
        for (int j = 0; j < 3; ++j) EXPECT_EQ(b.images[i * 3 + j], d.sample(idx)[j]);
      }
    }
    EXPECT_EQ(sizes, dropLast ? std::vector<int>({4, 4}) : std::vector<int>({4, 4, 2}));
  }
}

TEST(SyntheticDatasetTest, DeterministicAndSplitsDiffer) {
  SyntheticConfig cfg{.samples = 64, .sampleShape = {1, 4, 4}, .classes = 3, .seed = 9};
  Dataset a = makeSyntheticDataset(cfg).value(), b = makeSyntheticDataset(cfg).value();
  Dataset t = makeSyntheticDataset(cfg, SyntheticSplit::kTest).value();
  EXPECT_TRUE(a.validate().isOk());
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.images, t.images);
  EXPECT_EQ(a.sampleNumel(), 16);
  double mean = 0, sd = 0;
  a.normalize(0.5f, 2.f);
  b.meanStd(&mean, &sd);
  Dataset c = makeSyntheticDataset(cfg).value();
  for (size_t i = 0; i < c.images.size(); ++i) EXPECT_FLOAT_EQ(a.images[i], (c.images[i] - 0.5f) / 2.f);
  EXPECT_FALSE(makeSyntheticDataset({.classes = 1}).isOk());
}

}  // namespace
}  // namespace ddp::data
