// Random tokens and their constant-time comparison.
#include "common/secret.h"

#include <gtest/gtest.h>

#include <set>

namespace ddp {
namespace {

TEST(SecretTest, RandomHexHasTheLengthAndAlphabetAndDiffers) {
  std::set<std::string> seen;
  for (int i = 0; i < 16; ++i) {
    auto t = randomHex(32);
    ASSERT_TRUE(t.isOk()) << t.status();
    EXPECT_EQ(t->size(), 64u);
    EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos) << *t;
    seen.insert(*t);
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(SecretTest, SecretEqualsMatchesExactlyAndNeverAnEmptySecret) {
  EXPECT_TRUE(secretEquals("abc", "abc"));
  EXPECT_FALSE(secretEquals("abc", "abd"));
  EXPECT_FALSE(secretEquals("abc", "ab"));
  EXPECT_FALSE(secretEquals("abc", "abcd"));
  EXPECT_FALSE(secretEquals("abc", ""));
  EXPECT_FALSE(secretEquals("", ""));
}

}  // namespace
}  // namespace ddp
