// FNV-1a 64 (common/fnv1a.h): the published test vectors, the word form equal to hashing the
// value's little-endian bytes, and continuing a hash equal to hashing the concatenation. The
// values are stable by contract (PowerSGD seeds and bucket identities are saved in checkpoints).
#include "common/fnv1a.h"

#include <gtest/gtest.h>

#include <string>

namespace ddp {
namespace {

TEST(Fnv1aTest, PublishedVectors) {
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ull);
  static_assert(fnv1a("a") == 0xaf63dc4c8601ec8cull, "usable in constant expressions");
}

TEST(Fnv1aTest, AWordIsItsEightLittleEndianBytes) {
  const uint64_t v = 0x0102030405060708ull;
  const std::string bytes = {'\x08', '\x07', '\x06', '\x05', '\x04', '\x03', '\x02', '\x01'};
  EXPECT_EQ(fnv1aWord(kFnv1aOffsetBasis, v), fnv1a(bytes));
  EXPECT_EQ(fnv1aWord(kFnv1aOffsetBasis, 0), fnv1a(std::string(8, '\0')));
}

TEST(Fnv1aTest, ContinuingIsHashingTheConcatenation) {
  EXPECT_EQ(fnv1a("bar", fnv1a("foo")), fnv1a("foobar"));
  EXPECT_EQ(fnv1aRound(kFnv1aOffsetBasis, 'a'), fnv1a("a"));
}

}  // namespace
}  // namespace ddp
