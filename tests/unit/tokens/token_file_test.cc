// Token files: writeTokenFile checked by an independent fread reader, inspectTokenFile checked
// on files written by hand (token_file_oracle.h), every error naming the file and what is wrong,
// glob expansion and the source check. Real files in a temporary directory.
#include "common/tokens/token_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/unit/tokens/token_file_oracle.h"

namespace ddp::tokens {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

std::vector<std::string> dirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(TokenFileTest, WrittenFileReadsBackWithAnIndependentReader) {
  TempDir dir("tokens");
  for (TokenDType dtype : {TokenDType::kUint16, TokenDType::kUint32}) {
    const std::string path = dir.path() + "/" + tokenDTypeName(dtype) + ".bin";
    std::vector<int32_t> tokens = {0, 1, 255, 256, 50256, 65535};
    if (dtype == TokenDType::kUint32) tokens.push_back(2147483647);
    ASSERT_TRUE(writeTokenFile(path, tokens, dtype).isOk());

    auto hand = test::readLlmcByHand(path);
    ASSERT_TRUE(hand.has_value());
    EXPECT_EQ(hand->header[0], 20240520);
    EXPECT_EQ(hand->header[1], dtype == TokenDType::kUint16 ? 1 : 2);
    EXPECT_EQ(hand->header[2], static_cast<int32_t>(tokens.size()));
    for (int i = 3; i < 256; ++i) EXPECT_EQ(hand->header[i], 0) << "header[" << i << "]";
    ASSERT_EQ(hand->tokens.size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(hand->tokens[i], tokens[i]) << i;
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)),
              1024 + static_cast<int64_t>(tokens.size()) * (dtype == TokenDType::kUint16 ? 2 : 4));

    auto info = inspectTokenFile(path);
    ASSERT_TRUE(info.isOk()) << info.status();
    EXPECT_EQ(*info, (TokenFileInfo{path, dtype, static_cast<int64_t>(tokens.size()), 1024}));
  }
  // No temporary file is left beside them.
  EXPECT_EQ(dirEntries(dir.path()).size(), 2u);
}

TEST(TokenFileTest, EmptyFileHasAHeaderOnly) {
  TempDir dir("tokens");
  const std::string path = dir.path() + "/empty.bin";
  ASSERT_TRUE(writeTokenFile(path, {}, TokenDType::kUint16).isOk());
  EXPECT_EQ(fs::file_size(path), 1024u);
  auto info = inspectTokenFile(path);
  ASSERT_TRUE(info.isOk()) << info.status();
  EXPECT_EQ(info->tokens, 0);
}

TEST(TokenFileTest, WriteRefusesTokensThatDoNotFitAndLeavesNothing) {
  TempDir dir("tokens");
  const std::string path = dir.path() + "/t.bin";
  Status s = writeTokenFile(path, std::vector<int32_t>{1, 2, 65536}, TokenDType::kUint16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(s, path) && mentions(s, "token 65536 at index 2") && mentions(s, "uint16")) << s;
  s = writeTokenFile(path, std::vector<int32_t>{-1}, TokenDType::kUint32);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(s, "token -1 at index 0")) << s;
  EXPECT_TRUE(dirEntries(dir.path()).empty());
  // 65536 fits uint32.
  EXPECT_TRUE(writeTokenFile(path, std::vector<int32_t>{65536}, TokenDType::kUint32).isOk());
}

TEST(TokenFileTest, WriteReplacesAnExistingFileWhole) {
  TempDir dir("tokens");
  const std::string path = dir.path() + "/t.bin";
  ASSERT_TRUE(writeTokenFile(path, std::vector<int32_t>(1000, 7), TokenDType::kUint32).isOk());
  ASSERT_TRUE(writeTokenFile(path, std::vector<int32_t>{3, 4}, TokenDType::kUint16).isOk());
  auto hand = test::readLlmcByHand(path);
  ASSERT_TRUE(hand.has_value());
  EXPECT_EQ(hand->header[1], 1);
  EXPECT_EQ(hand->tokens, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(fs::file_size(path), 1028u);
  EXPECT_EQ(dirEntries(dir.path()), std::vector<std::string>{"t.bin"});
  // A directory that does not exist: an I/O error naming the file.
  Status s = writeTokenFile(dir.path() + "/no/such/t.bin", std::vector<int32_t>{1}, TokenDType::kUint16);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(mentions(s, dir.path() + "/no/such/t.bin")) << s;
}

TEST(TokenFileTest, InspectsFilesWrittenByHand) {
  TempDir dir("tokens");
  const std::string a = test::writeLlmcByHand(dir.path() + "/a.bin", {5, 6, 7}, 1);
  const std::string b = test::writeLlmcByHand(dir.path() + "/b.bin", {70000, 1}, 2);
  auto ia = inspectTokenFile(a);
  ASSERT_TRUE(ia.isOk()) << ia.status();
  EXPECT_EQ(*ia, (TokenFileInfo{a, TokenDType::kUint16, 3, 1024}));
  auto ib = inspectTokenFile(b);
  ASSERT_TRUE(ib.isOk()) << ib.status();
  EXPECT_EQ(*ib, (TokenFileInfo{b, TokenDType::kUint32, 2, 1024}));
}

TEST(TokenFileTest, HeaderErrorsNameTheFileAndTheProblem) {
  TempDir dir("tokens");
  const std::string d = dir.path();
  struct Case {
    std::string name;
    std::string bytes;
    std::vector<std::string> said;
  };
  const std::vector<Case> cases = {
      {"short.bin", std::string(100, '\0'), {"holds 100 bytes, less than the 1024-byte llm.c header", "uint16 or uint32"}},
      {"magic.bin", test::llmcHeader(12345, 1, 0), {"not an llm.c token file: magic 12345, expected 20240520"}},
      {"version.bin", test::llmcHeader(20240520, 3, 0), {"version 3 is not supported (1: uint16 tokens, 2: uint32"}},
      {"negative.bin", test::llmcHeader(20240520, 1, -5), {"header says -5 tokens"}},
      {"truncated.bin", test::llmcHeader(20240520, 1, 1000) + std::string(1500, '\1'),
       {"header says 1000 uint16 tokens (2000 bytes after the header) but the file holds 1500 bytes after the header"}},
      {"long.bin", test::llmcHeader(20240520, 2, 2) + std::string(12, '\1'),
       {"header says 2 uint32 tokens (8 bytes after the header) but the file holds 12 bytes"}},
  };
  for (const Case& c : cases) {
    const std::string path = test::writeBytes(d + "/" + c.name, c.bytes);
    auto r = inspectTokenFile(path);
    ASSERT_FALSE(r.isOk()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_TRUE(mentions(r.status(), path + ": ")) << r.status();
    for (const std::string& s : c.said) EXPECT_TRUE(mentions(r.status(), s)) << r.status();
  }
}

TEST(TokenFileTest, MissingFilesAndDirectoriesAreNamed) {
  TempDir dir("tokens");
  auto missing = inspectTokenFile(dir.path() + "/nope.bin");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mentions(missing.status(), dir.path() + "/nope.bin: no such file")) << missing.status();

  auto directory = inspectTokenFile(dir.path());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(directory.status(), dir.path() + " is a directory")) << directory.status();
}

TEST(TokenFileTest, UnreadableFileIsPermissionDenied) {
  TempDir dir("tokens");
  const std::string locked = test::writeLlmcByHand(dir.path() + "/locked.bin", {1}, 1);
  ::chmod(locked.c_str(), 0);
  if (::access(locked.c_str(), R_OK) == 0) GTEST_SKIP() << "running with the right to read any file (root)";
  auto unreadable = inspectTokenFile(locked);
  EXPECT_EQ(unreadable.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(mentions(unreadable.status(), locked + ": cannot open")) << unreadable.status();
}

TEST(TokenFileTest, RawFilesHaveADeclaredDType) {
  TempDir dir("tokens");
  const std::string r16 = test::writeBytes(dir.path() + "/r16.bin", test::tokenBytes({1, 2, 3, 4, 5}, 2));
  auto i16 = inspectTokenFile(r16, TokenDType::kUint16);
  ASSERT_TRUE(i16.isOk()) << i16.status();
  EXPECT_EQ(*i16, (TokenFileInfo{r16, TokenDType::kUint16, 5, 0}));
  // The same 10 bytes are not a whole number of uint32 tokens.
  auto i32 = inspectTokenFile(r16, TokenDType::kUint32);
  EXPECT_EQ(i32.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(i32.status(), r16 + ": 10 bytes is not a whole number of uint32 tokens (4 bytes each)"))
      << i32.status();
  // Without a declared dtype, a raw file is not an llm.c file: the message says what to do.
  auto undeclared = inspectTokenFile(r16);
  EXPECT_TRUE(mentions(undeclared.status(), "needs its dtype declared")) << undeclared.status();
  // An llm.c file declared raw is refused rather than read with its header as tokens.
  const std::string llmc = test::writeLlmcByHand(dir.path() + "/llmc.bin", {1, 2}, 1);
  auto declared = inspectTokenFile(llmc, TokenDType::kUint16);
  EXPECT_EQ(declared.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(declared.status(), llmc + ": has an llm.c header")) << declared.status();
  // A raw file that merely starts like a header (its size disagrees) is raw tokens.
  const std::string lookalike =
      test::writeBytes(dir.path() + "/lookalike.bin", test::llmcHeader(20240520, 1, 0) + test::tokenBytes({9}, 2));
  auto raw = inspectTokenFile(lookalike, TokenDType::kUint16);
  ASSERT_TRUE(raw.isOk()) << raw.status();
  EXPECT_EQ(raw->tokens, 513);
}

TEST(TokenFileTest, ExpandsPathsAndGlobsSorted) {
  TempDir dir("tokens");
  const std::string d = dir.path();
  for (const char* n : {"shard_10.bin", "shard_02.bin", "shard_01.bin", "notes.txt"}) test::writeBytes(d + "/" + n, "x");
  auto globbed = expandTokenPaths(d + "/shard_*.bin");
  ASSERT_TRUE(globbed.isOk()) << globbed.status();
  EXPECT_EQ(*globbed, (std::vector<std::string>{d + "/shard_01.bin", d + "/shard_02.bin", d + "/shard_10.bin"}));
  auto one = expandTokenPaths(d + "/notes.txt");
  ASSERT_TRUE(one.isOk()) << one.status();
  EXPECT_EQ(*one, std::vector<std::string>{d + "/notes.txt"});
  auto question = expandTokenPaths(d + "/shard_0?.bin");
  ASSERT_TRUE(question.isOk());
  EXPECT_EQ(question->size(), 2u);

  auto none = expandTokenPaths(d + "/val_*.bin");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mentions(none.status(), "no token file matches '" + d + "/val_*.bin'")) << none.status();
  auto absent = expandTokenPaths(d + "/train.bin");
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(mentions(absent.status(), d + "/train.bin")) << absent.status();

  auto directory = expandTokenPaths(d);
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(directory.status(), d + " is a directory")) << directory.status();
  fs::create_directory(d + "/shard_99.bin");
  auto matchesDir = expandTokenPaths(d + "/shard_*.bin");
  EXPECT_EQ(matchesDir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(matchesDir.status(), d + "/shard_99.bin is a directory")) << matchesDir.status();

  EXPECT_EQ(expandTokenPaths("").status().code(), StatusCode::kInvalidArgument);
}

TEST(TokenFileTest, SourceCheckCountsEveryFileAgainstOneWindow) {
  TempDir dir("tokens");
  const std::string d = dir.path();
  test::writeLlmcByHand(d + "/a.bin", {1, 2, 3}, 1);
  test::writeLlmcByHand(d + "/b.bin", {4, 5}, 2);
  const std::string pattern = d + "/*.bin";
  auto infos = inspectTokenSource(pattern);
  ASSERT_TRUE(infos.isOk()) << infos.status();
  ASSERT_EQ(infos->size(), 2u);
  EXPECT_EQ((*infos)[0].tokens + (*infos)[1].tokens, 5);

  EXPECT_TRUE(checkTokenSource(pattern, std::nullopt, 5).isOk());  // exactly one window
  Status tooShort = checkTokenSource(pattern, std::nullopt, 6);
  EXPECT_EQ(tooShort.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(tooShort, "'" + pattern + "' holds 5 tokens in 2 files, fewer than one window of 6")) << tooShort;
  EXPECT_EQ(checkTokenSource(pattern, std::nullopt, 1).code(), StatusCode::kInvalidArgument);

  // One bad file among good ones: the error names it.
  const std::string bad = test::writeBytes(d + "/c.bin", test::llmcHeader(20240520, 1, 10));
  Status s = checkTokenSource(pattern, std::nullopt, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(s, bad + ": header says 10")) << s;
  EXPECT_EQ(checkTokenSource(d + "/z*.bin", std::nullopt, 2).code(), StatusCode::kNotFound);
}

TEST(TokenFileTest, DTypeNames) {
  EXPECT_EQ(*parseTokenDType("uint16"), TokenDType::kUint16);
  EXPECT_EQ(*parseTokenDType("uint32"), TokenDType::kUint32);
  auto bad = parseTokenDType("int32");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(mentions(bad.status(), "'int32'"));
  EXPECT_EQ(tokenDTypeBytes(TokenDType::kUint16), 2);
  EXPECT_EQ(tokenDTypeBytes(TokenDType::kUint32), 4);
  EXPECT_EQ(tokenDTypeMax(TokenDType::kUint16), 65535u);
  EXPECT_EQ(tokenDTypeMax(TokenDType::kUint32), 4294967295u);
}

}  // namespace
}  // namespace ddp::tokens
