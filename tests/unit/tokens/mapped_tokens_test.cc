// MappedTokens over real files written by hand (token_file_oracle.h): every range, across file
// boundaries and empty files, against the closed form the files were written from; the
// vocabulary check naming the file and the index; reads from many threads at once; moves; and
// the mappings themselves (/proc/self/maps) present while open and gone after.
#include "common/tokens/mapped_tokens.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/unit/tokens/token_file_oracle.h"

namespace ddp::tokens {
namespace {

using test::TempDir;

// The token at global index i of the test's sources.
int64_t tokenAt(int64_t i) { return (i * 7919 + 13) % 1000; }

std::vector<int64_t> tokensFrom(int64_t first, int64_t n) {
  std::vector<int64_t> t;
  for (int64_t i = first; i < first + n; ++i) t.push_back(tokenAt(i));
  return t;
}

// Mappings of `path` in this process.
int mappingsOf(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) ++n;
  }
  return n;
}

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

// Files a (7 uint16), b (0 tokens), c (5 uint32), d (4 uint16): 16 tokens in all.
struct Shards {
  TempDir dir{"mapped"};
  std::string pattern = dir.path() + "/shard_*.bin";
  Shards() {
    test::writeLlmcByHand(dir.path() + "/shard_a.bin", tokensFrom(0, 7), 1);
    test::writeLlmcByHand(dir.path() + "/shard_b.bin", {}, 1);
    test::writeLlmcByHand(dir.path() + "/shard_c.bin", tokensFrom(7, 5), 2);
    test::writeLlmcByHand(dir.path() + "/shard_d.bin", tokensFrom(12, 4), 1);
  }
};

TEST(MappedTokensTest, EveryRangeMatchesTheClosedFormAcrossFiles) {
  Shards s;
  auto m = MappedTokens::open(s.pattern);
  ASSERT_TRUE(m.isOk()) << m.status();
  EXPECT_EQ(m->size(), 16);
  ASSERT_EQ(m->files().size(), 4u);
  EXPECT_EQ(m->files()[2].dtype, TokenDType::kUint32);
  for (int64_t start = 0; start <= 16; ++start) {
    for (int64_t n = 0; start + n <= 16; ++n) {
      std::vector<int32_t> out(static_cast<size_t>(n), -1);
      ASSERT_TRUE(m->read(start, n, 1000, out.data()).isOk()) << start << "+" << n;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], tokenAt(start + i)) << start << "+" << i;
    }
  }
}

TEST(MappedTokensTest, OutOfRangeReadsAreRefused) {
  Shards s;
  auto m = MappedTokens::open(s.pattern);
  ASSERT_TRUE(m.isOk()) << m.status();
  int32_t out[20];
  EXPECT_EQ(m->read(10, 7, 1000, out).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(m->read(-1, 2, 1000, out).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(m->read(17, 0, 1000, out).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(m->read(16, 0, 1000, out).isOk());
  EXPECT_EQ(m->read(0, 1, 0, out).code(), StatusCode::kInvalidArgument);
}

TEST(MappedTokensTest, TokenOutsideTheVocabularyNamesTheFileAndIndex) {
  Shards s;
  auto m = MappedTokens::open(s.pattern);
  ASSERT_TRUE(m.isOk()) << m.status();
  // Global tokens 9, 10, 11 (indices 2, 3, 4 of shard_c.bin) are 284, 203, 122.
  ASSERT_EQ(tokenAt(9), 284);
  ASSERT_EQ(tokenAt(10), 203);
  ASSERT_EQ(tokenAt(11), 122);
  int32_t out[3];
  Status st = m->read(9, 3, 250, out);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(st, s.dir.path() + "/shard_c.bin: token 284 at index 2 of the file is outside the "
                              "vocabulary of 250 tokens"))
      << st;
  EXPECT_TRUE(m->read(10, 2, 250, out).isOk());
  EXPECT_TRUE(m->read(9, 3, 285, out).isOk());
}

TEST(MappedTokensTest, RawFilesOfADeclaredDType) {
  TempDir dir("mapped");
  test::writeBytes(dir.path() + "/r0.bin", test::tokenBytes(tokensFrom(0, 3), 4));
  test::writeBytes(dir.path() + "/r1.bin", test::tokenBytes(tokensFrom(3, 6), 4));
  auto m = MappedTokens::open(dir.path() + "/r*.bin", TokenDType::kUint32);
  ASSERT_TRUE(m.isOk()) << m.status();
  ASSERT_EQ(m->size(), 9);
  std::vector<int32_t> out(9);
  ASSERT_TRUE(m->read(0, 9, 1000, out.data()).isOk());
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], tokenAt(i));
  // Declared uint16, the same files hold twice as many tokens: the low and high halves.
  auto m16 = MappedTokens::open(dir.path() + "/r*.bin", TokenDType::kUint16);
  ASSERT_TRUE(m16.isOk()) << m16.status();
  EXPECT_EQ(m16->size(), 18);
}

TEST(MappedTokensTest, OpenFailsOnABadFileAndNamesIt) {
  Shards s;
  const std::string bad = test::writeBytes(s.dir.path() + "/shard_e.bin", test::llmcHeader(20240520, 1, 3));
  auto m = MappedTokens::open(s.pattern);
  ASSERT_FALSE(m.isOk());
  EXPECT_TRUE(mentions(m.status(), bad + ": header says 3")) << m.status();
  // Nothing stays mapped after the failed open.
  EXPECT_EQ(mappingsOf(s.dir.path() + "/shard_a.bin"), 0);
}

TEST(MappedTokensTest, ConcurrentReadsAgree) {
  Shards s;
  auto m = MappedTokens::open(s.pattern);
  ASSERT_TRUE(m.isOk()) << m.status();
  const MappedTokens& tokens = *m;
  std::vector<int> wrong(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      int32_t out[16];
      for (int rep = 0; rep < 2000; ++rep) {
        const int64_t start = (rep * 3 + t) % 12;
        if (!tokens.read(start, 4, 1000, out).isOk()) ++wrong[static_cast<size_t>(t)];
        for (int i = 0; i < 4; ++i) wrong[static_cast<size_t>(t)] += out[i] != tokenAt(start + i);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(wrong[static_cast<size_t>(t)], 0) << "thread " << t;
}

TEST(MappedTokensTest, MapsWhileOpenUnmapsOnDestructionAndMoves) {
  Shards s;
  const std::string a = s.dir.path() + "/shard_a.bin";
  const std::string c = s.dir.path() + "/shard_c.bin";
  EXPECT_EQ(mappingsOf(a), 0);
  {
    auto m = MappedTokens::open(s.pattern);
    ASSERT_TRUE(m.isOk()) << m.status();
    EXPECT_EQ(mappingsOf(a), 1);
    EXPECT_EQ(mappingsOf(c), 1);

    MappedTokens moved(std::move(*m));
    EXPECT_EQ(m->size(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(moved.size(), 16);
    EXPECT_EQ(mappingsOf(a), 1);
    int32_t out[3];
    ASSERT_TRUE(moved.read(6, 3, 1000, out).isOk());
    EXPECT_EQ(out[2], tokenAt(8));

    TempDir other("mapped");
    test::writeLlmcByHand(other.path() + "/x.bin", {1, 2}, 1);
    auto assigned = MappedTokens::open(other.path() + "/x.bin");
    ASSERT_TRUE(assigned.isOk());
    EXPECT_EQ(mappingsOf(other.path() + "/x.bin"), 1);
    *assigned = std::move(moved);  // unmaps x.bin, takes the shards
    EXPECT_EQ(mappingsOf(other.path() + "/x.bin"), 0);
    EXPECT_EQ(assigned->size(), 16);
    EXPECT_EQ(mappingsOf(a), 1);
  }
  EXPECT_EQ(mappingsOf(a), 0);
  EXPECT_EQ(mappingsOf(c), 0);
}

}  // namespace
}  // namespace ddp::tokens
