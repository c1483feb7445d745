// TokenWindowSampler against closed forms (Note [Token windows]): training starts are the
// written-out SplitMix64 hash mod the number of window positions; the ranks' slices of a step
// concatenate to the same global batch at every world size and split (elastic resharding); a
// sampler made fresh at any step reads what the first one read (resume); validation windows
// start at k T and are dealt out by index.
#include "worker/data/token_window_sampler.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace ddp::data {
namespace {

// SplitMix64 written out from its definition (the oracle for SplitMixRng::mix).
uint64_t splitMix64(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t mix(uint64_t a, uint64_t b) { return splitMix64(a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2))); }
int64_t expectedStart(uint64_t seed, uint64_t step, uint64_t index, int64_t n, int64_t window) {
  return static_cast<int64_t>(mix(mix(seed, step), index) % static_cast<uint64_t>(n - window + 1));
}

TokenWindowSampler make(int64_t total, int t, uint64_t seed, int rank, int world, int64_t b,
                        std::vector<int64_t> shares = {}) {
  auto s = TokenWindowSampler::create({.totalTokens = total, .contextLength = t, .seed = seed, .rank = rank,
                                       .worldSize = world, .batchPerRank = b, .shares = std::move(shares)});
  EXPECT_TRUE(s.isOk()) << s.status();
  return std::move(s).value();
}

TEST(TokenWindowSamplerTest, StartsAreTheHashModThePositions) {
  for (int64_t total : {5, 6, 97, 1000003}) {
    const int t = 4;
    auto s = make(total, t, 42, 0, 1, 16);
    for (uint64_t step : {0ull, 1ull, 7ull, 123456789ull}) {
      const auto starts = s.trainStarts(step);
      ASSERT_EQ(starts.size(), 16u);
      for (uint64_t i = 0; i < 16; ++i) {
        EXPECT_EQ(starts[i], expectedStart(42, step, i, total, t + 1)) << total << " " << step << " " << i;
        EXPECT_GE(starts[i], 0);
        EXPECT_LE(starts[i] + t + 1, total);
      }
    }
  }
  // One position only: every window starts at 0.
  auto exact = make(5, 4, 9, 0, 1, 3);
  EXPECT_EQ(exact.trainStarts(11), (std::vector<int64_t>{0, 0, 0}));
}

TEST(TokenWindowSamplerTest, EveryPositionIsReachable) {
  const int64_t total = 40;
  const int t = 7;  // 33 positions
  auto s = make(total, t, 3, 0, 1, 8);
  std::set<int64_t> seen;
  for (uint64_t step = 0; step < 200; ++step) {
    for (int64_t v : s.trainStarts(step)) seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 33u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 32);
}

// The step's global batch, read rank by rank and concatenated.
std::vector<int64_t> globalBatch(int64_t total, int t, uint64_t seed, uint64_t step, int world, int64_t b,
                                 const std::vector<int64_t>& shares = {}) {
  std::vector<int64_t> all;
  for (int r = 0; r < world; ++r) {
    auto s = make(total, t, seed, r, world, b, shares);
    EXPECT_EQ(s.firstIndex(), static_cast<int64_t>(all.size()));
    const auto mine = s.trainStarts(step);
    EXPECT_EQ(static_cast<int64_t>(mine.size()), s.localBatch());
    all.insert(all.end(), mine.begin(), mine.end());
  }
  return all;
}

TEST(TokenWindowSamplerTest, TheGlobalBatchIsTheSameAtEveryWorldSize) {
  const int64_t total = 100000;
  const int t = 64;
  for (uint64_t step : {0ull, 5ull, 999ull}) {
    const auto one = globalBatch(total, t, 17, step, 1, 12);
    ASSERT_EQ(one.size(), 12u);
    for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], expectedStart(17, step, i, total, t + 1));
    EXPECT_EQ(globalBatch(total, t, 17, step, 2, 6), one);
    EXPECT_EQ(globalBatch(total, t, 17, step, 3, 4), one);
    EXPECT_EQ(globalBatch(total, t, 17, step, 4, 3), one);
    // A split the world size does not divide evenly (Note [Elastic batch]): 12 over 5 ranks.
    EXPECT_EQ(globalBatch(total, t, 17, step, 5, 0, {3, 3, 2, 2, 2}), one);
  }
  auto s = make(total, t, 17, 2, 4, 3);
  EXPECT_EQ(s.globalBatch(), 12);
  EXPECT_EQ(s.firstIndex(), 6);
  EXPECT_EQ(s.localBatch(), 3);
}

TEST(TokenWindowSamplerTest, AResumedSamplerReadsTheSameWindows) {
  auto first = make(5000, 16, 8, 1, 3, 5);
  std::vector<std::vector<int64_t>> run;
  for (uint64_t step = 0; step < 20; ++step) run.push_back(first.trainStarts(step));
  for (uint64_t resumeAt : {0ull, 1ull, 13ull, 19ull}) {
    auto resumed = make(5000, 16, 8, 1, 3, 5);
    for (uint64_t step = resumeAt; step < 20; ++step) EXPECT_EQ(resumed.trainStarts(step), run[step]) << step;
  }
  // The seed and the step change the windows.
  EXPECT_NE(make(5000, 16, 9, 1, 3, 5).trainStarts(4), run[4]);
  EXPECT_NE(run[4], run[5]);
}

TEST(TokenWindowSamplerTest, ConfigErrors) {
  auto bad = [](TokenWindowConfig c) { return TokenWindowSampler::create(std::move(c)).status().code(); };
  const TokenWindowConfig good{.totalTokens = 10, .contextLength = 4, .rank = 0, .worldSize = 2, .batchPerRank = 2};
  EXPECT_TRUE(TokenWindowSampler::create(good).isOk());
  auto c = good;
  c.contextLength = 0;
  EXPECT_EQ(bad(c), StatusCode::kInvalidArgument);
  c = good;
  c.totalTokens = 4;  // shorter than one window of 5
  auto st = TokenWindowSampler::create(c).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("holds 4 tokens, fewer than one window of 5"), std::string::npos) << st;
  c = good;
  c.rank = 2;
  EXPECT_EQ(bad(c), StatusCode::kInvalidArgument);
  c = good;
  c.batchPerRank = 0;
  EXPECT_EQ(bad(c), StatusCode::kInvalidArgument);
  c = good;
  c.shares = {1};
  EXPECT_EQ(bad(c), StatusCode::kInvalidArgument);
  c.shares = {1, 0};
  EXPECT_EQ(bad(c), StatusCode::kInvalidArgument);
}

TEST(TokenWindowSamplerTest, ValidationWindowsAreSequentialAndDealtByIndex) {
  // N = 11, T = 3: windows [0, 4), [3, 7), [6, 10); [9, 13) does not fit.
  EXPECT_EQ(valWindowCount(11, 3, 0), 3);
  EXPECT_EQ(valWindowStarts(11, 3, 0, 0, 1), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(valWindowCount(10, 3, 0), 3);  // [6, 10) fits exactly
  EXPECT_EQ(valWindowCount(9, 3, 0), 2);
  EXPECT_EQ(valWindowCount(4, 3, 0), 1);
  EXPECT_EQ(valWindowCount(3, 3, 0), 0);
  EXPECT_EQ(valWindowCount(0, 3, 0), 0);
  // The first `limit`.
  EXPECT_EQ(valWindowCount(11, 3, 2), 2);
  EXPECT_EQ(valWindowCount(11, 3, 50), 3);
  EXPECT_EQ(valWindowStarts(11, 3, 2, 0, 1), (std::vector<int64_t>{0, 3}));
  // Across ranks: k = r, r + W, ...; together every window once.
  for (int64_t total : {1, 2, 50, 1001}) {
    for (int t : {1, 4, 7}) {
      for (int64_t limit : {0, 1, 5}) {
        const int64_t count = valWindowCount(total, t, limit);
        const int64_t all = total >= t + 1 ? (total - 1) / t : 0;
        EXPECT_EQ(count, limit > 0 ? std::min(limit, all) : all);
        for (int world : {1, 2, 3, 4}) {
          std::vector<int64_t> seen(static_cast<size_t>(count), 0);
          for (int r = 0; r < world; ++r) {
            const auto starts = valWindowStarts(total, t, limit, r, world);
            EXPECT_EQ(static_cast<int64_t>(starts.size()), count / world + (r < count % world ? 1 : 0));
            for (size_t j = 0; j < starts.size(); ++j) {
              const int64_t k = r + static_cast<int64_t>(j) * world;
              EXPECT_EQ(starts[j], k * t);
              EXPECT_LE(starts[j] + t + 1, total);
              ++seen[static_cast<size_t>(k)];
            }
          }
          for (int64_t v : seen) EXPECT_EQ(v, 1);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ddp::data
