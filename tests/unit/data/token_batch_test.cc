// TokenBatch over the windows of a tiny token source written by the test (three llm.c files by
// hand, and the same tokens in memory): inputs and targets against the closed form the tokens
// were written from, for training and validation windows; the vocabulary and range errors; the
// valFraction split of an in-memory sequence.
#include "worker/data/token_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/tokens/byte_tokens.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/tokens/token_file_oracle.h"
#include "worker/data/token_window_sampler.h"

namespace ddp::data {
namespace {

using test::TempDir;

constexpr int64_t kVocab = 50;
constexpr int64_t kTotal = 30;
int64_t tokenAt(int64_t i) { return (i * 31 + 5) % kVocab; }

std::vector<int64_t> tokensFrom(int64_t first, int64_t n) {
  std::vector<int64_t> t;
  for (int64_t i = first; i < first + n; ++i) t.push_back(tokenAt(i));
  return t;
}

std::vector<int32_t> inMemory() {
  std::vector<int32_t> t;
  for (int64_t v : tokensFrom(0, kTotal)) t.push_back(static_cast<int32_t>(v));
  return t;
}

// The tokens [0, 30) in three files: 10 uint16, 7 uint32, 13 uint16.
struct TinySource {
  TempDir dir{"token_batch"};
  std::string pattern = dir.path() + "/part_*.bin";
  TinySource() {
    test::writeLlmcByHand(dir.path() + "/part_0.bin", tokensFrom(0, 10), 1);
    test::writeLlmcByHand(dir.path() + "/part_1.bin", tokensFrom(10, 7), 2);
    test::writeLlmcByHand(dir.path() + "/part_2.bin", tokensFrom(17, 13), 1);
  }
};

void expectWindows(const TokenBatch& b, const std::vector<int64_t>& starts, int t) {
  ASSERT_EQ(b.size, static_cast<int>(starts.size()));
  ASSERT_EQ(b.contextLength, t);
  ASSERT_EQ(b.inputs.size(), starts.size() * static_cast<size_t>(t));
  ASSERT_EQ(b.targets.size(), starts.size() * static_cast<size_t>(t));
  for (size_t i = 0; i < starts.size(); ++i) {
    for (int j = 0; j < t; ++j) {
      EXPECT_EQ(b.inputs[i * t + j], tokenAt(starts[i] + j)) << "window " << i << " at " << starts[i] << " j " << j;
      EXPECT_EQ(b.targets[i * t + j], tokenAt(starts[i] + j + 1)) << "window " << i << " at " << starts[i] << " j " << j;
    }
  }
}

TEST(TokenBatchTest, TrainingWindowsFromFilesAndFromMemoryMatchTheClosedForm) {
  TinySource src;
  auto mapped = tokens::MappedTokens::open(src.pattern);
  ASSERT_TRUE(mapped.isOk()) << mapped.status();
  ASSERT_EQ(mapped->size(), kTotal);
  const std::vector<int32_t> memory = inMemory();
  const int t = 6;
  for (int world : {1, 2, 3}) {
    for (int rank = 0; rank < world; ++rank) {
      auto sampler = TokenWindowSampler::create(
          {.totalTokens = kTotal, .contextLength = t, .seed = 5, .rank = rank, .worldSize = world, .batchPerRank = 4});
      ASSERT_TRUE(sampler.isOk()) << sampler.status();
      TokenBatch fromFiles, fromMemory;
      for (uint64_t step = 0; step < 30; ++step) {
        const auto starts = sampler->trainStarts(step);
        ASSERT_TRUE(fillTokenBatch(*mapped, starts, t, kVocab, &fromFiles).isOk());
        ASSERT_TRUE(fillTokenBatch(memory, starts, t, kVocab, &fromMemory).isOk());
        expectWindows(fromFiles, starts, t);
        expectWindows(fromMemory, starts, t);
      }
    }
  }
}

TEST(TokenBatchTest, EveryWindowPositionAcrossFileBoundaries) {
  TinySource src;
  auto mapped = tokens::MappedTokens::open(src.pattern);
  ASSERT_TRUE(mapped.isOk()) << mapped.status();
  for (int t : {1, 3, 9, 29}) {
    std::vector<int64_t> starts;
    for (int64_t s = 0; s + t + 1 <= kTotal; ++s) starts.push_back(s);
    TokenBatch b;
    ASSERT_TRUE(fillTokenBatch(*mapped, starts, t, kVocab, &b).isOk()) << t;
    expectWindows(b, starts, t);
  }
}

TEST(TokenBatchTest, ValidationWindows) {
  TinySource src;
  auto mapped = tokens::MappedTokens::open(src.pattern);
  ASSERT_TRUE(mapped.isOk()) << mapped.status();
  const int t = 4;  // (30 - 1) / 4 = 7 windows: starts 0, 4, ..., 24
  std::vector<int64_t> all;
  for (int r = 0; r < 2; ++r) {
    const auto starts = valWindowStarts(kTotal, t, 0, r, 2);
    TokenBatch b;
    ASSERT_TRUE(fillTokenBatch(*mapped, starts, t, kVocab, &b).isOk());
    expectWindows(b, starts, t);
    all.insert(all.end(), starts.begin(), starts.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 24}));
}

TEST(TokenBatchTest, BuffersAreReusedAndResized) {
  const std::vector<int32_t> memory = inMemory();
  TokenBatch b;
  ASSERT_TRUE(fillTokenBatch(memory, std::vector<int64_t>{0, 1, 2, 3}, 5, kVocab, &b).isOk());
  const int32_t* data = b.inputs.data();
  ASSERT_TRUE(fillTokenBatch(memory, std::vector<int64_t>{7}, 5, kVocab, &b).isOk());
  EXPECT_EQ(b.inputs.data(), data);
  expectWindows(b, {7}, 5);
  ASSERT_TRUE(fillTokenBatch(memory, std::vector<int64_t>{}, 5, kVocab, &b).isOk());
  EXPECT_EQ(b.size, 0);
  EXPECT_TRUE(b.inputs.empty());
}

TEST(TokenBatchTest, RangeAndVocabularyErrors) {
  TinySource src;
  auto mapped = tokens::MappedTokens::open(src.pattern);
  ASSERT_TRUE(mapped.isOk()) << mapped.status();
  const std::vector<int32_t> memory = inMemory();
  TokenBatch b;
  // The last window of 5 starts at 25; 26 runs past the end.
  EXPECT_TRUE(fillTokenBatch(*mapped, std::vector<int64_t>{25}, 4, kVocab, &b).isOk());
  EXPECT_EQ(fillTokenBatch(*mapped, std::vector<int64_t>{26}, 4, kVocab, &b).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(fillTokenBatch(memory, std::vector<int64_t>{26}, 4, kVocab, &b).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(fillTokenBatch(memory, std::vector<int64_t>{-1}, 4, kVocab, &b).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(fillTokenBatch(memory, std::vector<int64_t>{0}, 0, kVocab, &b).code(), StatusCode::kInvalidArgument);

  // Tokens 10..16 live in part_1.bin (its indices 0..6); tokens 10 and 11 are 15 and 46, so 11
  // (index 1 of the file) is the first of the window [10, 15) outside a vocabulary of 20.
  ASSERT_EQ(tokenAt(10), 15);
  ASSERT_EQ(tokenAt(11), 46);
  const int64_t bad = 11;
  Status st = fillTokenBatch(*mapped, std::vector<int64_t>{10}, 4, 20, &b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(src.dir.path() + "/part_1.bin: token " + std::to_string(tokenAt(bad)) + " at index " +
                              std::to_string(bad - 10) + " of the file"),
            std::string::npos)
      << st;
  st = fillTokenBatch(memory, std::vector<int64_t>{10}, 4, 20, &b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("token " + std::to_string(tokenAt(bad)) + " at index " + std::to_string(bad)),
            std::string::npos)
      << st;
}

TEST(TokenBatchTest, SplitKeepsTheLastFractionForValidation) {
  std::vector<int32_t> seq(100);
  for (int i = 0; i < 100; ++i) seq[static_cast<size_t>(i)] = i;
  auto split = splitTokens(seq, 0.1, 4);
  ASSERT_TRUE(split.isOk()) << split.status();
  ASSERT_EQ(split->train.size(), 90u);
  ASSERT_EQ(split->val.size(), 10u);
  EXPECT_EQ(split->train.front(), 0);
  EXPECT_EQ(split->train.back(), 89);
  EXPECT_EQ(split->val.front(), 90);
  EXPECT_EQ(split->val.back(), 99);
  // The same count as `ddpctl tokenize` writes.
  EXPECT_EQ(static_cast<int64_t>(split->val.size()), tokens::valTokenCount(100, 0.1));

  auto none = splitTokens(seq, 0, 4);
  ASSERT_TRUE(none.isOk()) << none.status();
  EXPECT_EQ(none->train.size(), 100u);
  EXPECT_TRUE(none->val.empty());

  auto shortVal = splitTokens(seq, 0.04, 4);  // 4 validation tokens < one window of 5
  EXPECT_EQ(shortVal.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shortVal.status().message().find("validation part of 100 tokens"), std::string::npos) << shortVal.status();
  EXPECT_NE(shortVal.status().message().find("holds 4 tokens, fewer than one window of 5"), std::string::npos);
  EXPECT_TRUE(splitTokens(seq, 0.05, 4).isOk());  // exactly one window

  auto shortTrain = splitTokens(std::vector<int32_t>(10, 1), 0.5, 5);  // 5 training tokens < 6
  EXPECT_EQ(shortTrain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shortTrain.status().message().find("training part"), std::string::npos) << shortTrain.status();

  for (double f : {1.0, -0.1, 1.5, std::nan("")}) {
    EXPECT_EQ(splitTokens(seq, f, 4).status().code(), StatusCode::kInvalidArgument) << f;
  }
}

}  // namespace
}  // namespace ddp::data
