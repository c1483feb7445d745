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
  EXPECT_EQ(saved, (SamplerState{5, 8}));
  auto bytes = saved.serialize();
  auto restoredState = SamplerState::deserialize(bytes);
  ASSERT_TRUE(restoredState.isOk());
  auto b = make(37, 1, 2, SamplerMode::kPad);  // fresh sampler at epoch 0
  ASSERT_TRUE(b.restore(*restoredState).isOk());
  EXPECT_EQ(b.next(100), a.next(100));
  EXPECT_TRUE(a.next(1).empty());
  EXPECT_EQ(b.restore({5, 1000}).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(SamplerState::deserialize(bytes.substr(0, 5)).status().code(), StatusCode::kDataLoss);
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
