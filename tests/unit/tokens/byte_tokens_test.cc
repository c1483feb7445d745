// Text as bytes: the tokens are the files' bytes in order (every byte value, binary included),
// unreadable files are named, and the validation split's closed form.
#include "common/tokens/byte_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/unit/tokens/token_file_oracle.h"

namespace ddp::tokens {
namespace {

using test::TempDir;

TEST(ByteTokensTest, TokensAreTheBytesOfTheFilesInOrder) {
  TempDir dir("bytes");
  std::string every;
  for (int b = 0; b < 256; ++b) every.push_back(static_cast<char>(b));
  const std::string a = test::writeBytes(dir.path() + "/a.txt", "Hi\n");
  const std::string b = test::writeBytes(dir.path() + "/b.bin", every);
  const std::string empty = test::writeBytes(dir.path() + "/empty.txt", "");
  auto t = bytesToTokens({b, empty, a, a});
  ASSERT_TRUE(t.isOk()) << t.status();
  std::vector<int32_t> expected;
  for (int v = 0; v < 256; ++v) expected.push_back(v);
  for (int rep = 0; rep < 2; ++rep) expected.insert(expected.end(), {'H', 'i', '\n'});
  EXPECT_EQ(*t, expected);
  auto none = bytesToTokens({});
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
}

TEST(ByteTokensTest, ALargeFileIsReadWhole) {
  TempDir dir("bytes");
  std::string text;
  for (int i = 0; i < 200000; ++i) text.push_back(static_cast<char>('a' + i % 26));
  auto t = bytesToTokens({test::writeBytes(dir.path() + "/big.txt", text)});
  ASSERT_TRUE(t.isOk()) << t.status();
  ASSERT_EQ(t->size(), text.size());
  for (size_t i = 0; i < text.size(); i += 9973) EXPECT_EQ((*t)[i], 'a' + static_cast<int>(i % 26));
}

TEST(ByteTokensTest, UnreadableFilesAreNamed) {
  TempDir dir("bytes");
  const std::string ok = test::writeBytes(dir.path() + "/ok.txt", "x");
  auto missing = bytesToTokens({ok, dir.path() + "/missing.txt"});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.path() + "/missing.txt"), std::string::npos) << missing.status();
  auto directory = bytesToTokens({dir.path()});
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(directory.status().message().find(dir.path() + " is a directory"), std::string::npos)
      << directory.status();
}

TEST(ByteTokensTest, ValidationCountIsTheFloorOfTheFraction) {
  EXPECT_EQ(valTokenCount(1000, 0.1), 100);
  EXPECT_EQ(valTokenCount(999, 0.1), 99);
  EXPECT_EQ(valTokenCount(9, 0.1), 0);
  EXPECT_EQ(valTokenCount(10, 0.25), 2);
  EXPECT_EQ(valTokenCount(1000, 0), 0);
  EXPECT_EQ(valTokenCount(0, 0.5), 0);
  EXPECT_EQ(valTokenCount(7, 0.999), 6);
}

}  // namespace
}  // namespace ddp::tokens
