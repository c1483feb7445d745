// `ddpctl tokenize`: in-process on text files written by the test, the written train.bin and
// val.bin read back with the library's reader (MappedTokens) and with an independent fread reader
// (token_file_oracle.h), against the closed form (the bytes, the last floor(F N) to val); usage
// and file errors with their exit statuses; and the built ddpctl binary dispatching to it.
#include "tools/ddpctl/tokenize_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/tokens/mapped_tokens.h"
#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/tokens/token_file_oracle.h"
#include "tools/ddpctl/run_command.h"

namespace ddp::ddpctl {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

struct Ran {
  int status = -1;
  std::string out, err;
};

Ran tokenize(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Ran r;
  r.status = tokenizeCommand(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The tokens of an llm.c uint16 file, read both ways; they must agree.
std::vector<int64_t> readBack(const std::string& path) {
  auto hand = test::readLlmcByHand(path);
  EXPECT_TRUE(hand.has_value()) << path;
  if (!hand) return {};
  EXPECT_EQ(hand->header[0], 20240520) << path;
  EXPECT_EQ(hand->header[1], 1) << path;
  EXPECT_EQ(hand->header[2], static_cast<int32_t>(hand->tokens.size())) << path;
  EXPECT_EQ(fs::file_size(path), 1024 + 2 * hand->tokens.size()) << path;
  auto mapped = tokens::MappedTokens::open(path);
  EXPECT_TRUE(mapped.isOk()) << mapped.status();
  if (!mapped.isOk()) return {};
  std::vector<int32_t> viaLibrary(static_cast<size_t>(mapped->size()));
  EXPECT_TRUE(mapped->read(0, mapped->size(), 256, viaLibrary.data()).isOk());
  EXPECT_EQ(std::vector<int64_t>(viaLibrary.begin(), viaLibrary.end()), hand->tokens) << path;
  return hand->tokens;
}

std::vector<int64_t> bytesOf(const std::string& text) {
  std::vector<int64_t> t;
  for (char c : text) t.push_back(static_cast<unsigned char>(c));
  return t;
}

struct Corpus {
  TempDir dir{"tokenize"};
  std::string aText = "To be, or not to be: that is the question.\n";
  std::string bText = "bytes \x01\xff\x80 too\n";
  std::string a = test::writeBytes(dir.path() + "/a.txt", aText);
  std::string b = test::writeBytes(dir.path() + "/b.txt", bText);
  std::string text = aText + bText;
};

TEST(TokenizeCommandTest, WritesTrainAndValFromTheBytes) {
  Corpus c;
  const std::string out = c.dir.path() + "/new/nested/out";  // created
  Ran r = tokenize({"--bytes", c.a, c.b, "-o", out, "--val-fraction", "0.25"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto all = bytesOf(c.text);
  const size_t val = all.size() / 4;  // floor(N * 0.25)
  const size_t train = all.size() - val;
  EXPECT_EQ(readBack(out + "/train.bin"), std::vector<int64_t>(all.begin(), all.begin() + train));
  EXPECT_EQ(readBack(out + "/val.bin"), std::vector<int64_t>(all.begin() + train, all.end()));
  EXPECT_NE(r.out.find("tokenized 2 files: " + std::to_string(all.size()) + " tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(out + "/train.bin: " + std::to_string(train) + " tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(out + "/val.bin: " + std::to_string(val) + " tokens"), std::string::npos) << r.out;
  // Only the two files, no temporaries.
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 2);
}

TEST(TokenizeCommandTest, DefaultFractionZeroFractionAndInlineValues) {
  Corpus c;
  const auto all = bytesOf(c.text);
  Ran r = tokenize({"-o", c.dir.path() + "/d", "--bytes", c.b, c.a});  // files in the order given
  ASSERT_EQ(r.status, kExitOk) << r.err;
  const auto sw = bytesOf(c.bText + c.aText);
  const size_t val = sw.size() / 10;  // the default 0.1
  EXPECT_EQ(readBack(c.dir.path() + "/d/val.bin"), std::vector<int64_t>(sw.end() - static_cast<long>(val), sw.end()));
  EXPECT_EQ(readBack(c.dir.path() + "/d/train.bin"), std::vector<int64_t>(sw.begin(), sw.end() - static_cast<long>(val)));

  r = tokenize({"--bytes", c.a, c.b, "--output=" + c.dir.path() + "/z", "--val-fraction=0"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(readBack(c.dir.path() + "/z/train.bin"), all);
  EXPECT_TRUE(readBack(c.dir.path() + "/z/val.bin").empty());
  // Running again replaces the files.
  r = tokenize({"--bytes", c.a, "-o", c.dir.path() + "/z", "--val-fraction", "0.5"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(readBack(c.dir.path() + "/z/train.bin").size() + readBack(c.dir.path() + "/z/val.bin").size(), c.aText.size());
}

TEST(TokenizeCommandTest, UsageErrorsNameTheFlag) {
  Corpus c;
  const std::string o = c.dir.path() + "/o";
  struct Case {
    std::vector<std::string> args;
    std::string said;
  };
  const std::vector<Case> cases = {
      {{"--bytes", c.a, "-o", o, "--val-fraction", "1"}, "--val-fraction: '1' is not a number in [0, 1)"},
      {{"--bytes", c.a, "-o", o, "--val-fraction", "-0.1"}, "--val-fraction: '-0.1' is not a number in [0, 1)"},
      {{"--bytes", c.a, "-o", o, "--val-fraction", "0.5x"}, "--val-fraction: '0.5x'"},
      {{"--bytes", c.a, "-o", o, "--val-fraction", "nan"}, "--val-fraction: 'nan'"},
      {{"--bytes", c.a, "-o", o, "--val-fraction"}, "--val-fraction needs a value"},
      {{"--bytes", c.a}, "give the output directory: -o DIR"},
      {{"-o", o}, "give --bytes FILE..."},
      {{"--bytes", "-o", o}, "--bytes needs at least one FILE"},
      {{"--bytes", c.a, "-o", o, "--vocab", "3"}, "unknown option '--vocab'"},
      {{c.a, "--bytes", c.b, "-o", o}, "unexpected argument '" + c.a + "'"},
  };
  for (const Case& k : cases) {
    Ran r = tokenize(k.args);
    EXPECT_EQ(r.status, kExitUsage) << k.said;
    EXPECT_NE(r.err.find("ddpctl tokenize: " + k.said), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ddpctl tokenize --help"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(o));
}

TEST(TokenizeCommandTest, FileErrorsNameTheFileAndFail) {
  Corpus c;
  const std::string o = c.dir.path() + "/o";
  Ran r = tokenize({"--bytes", c.a, c.dir.path() + "/missing.txt", "-o", o});
  EXPECT_EQ(r.status, kExitFailed);
  EXPECT_NE(r.err.find(c.dir.path() + "/missing.txt: no such file"), std::string::npos) << r.err;
  r = tokenize({"--bytes", c.dir.path(), "-o", o});
  EXPECT_EQ(r.status, kExitFailed);
  EXPECT_NE(r.err.find(c.dir.path() + " is a directory"), std::string::npos) << r.err;
  r = tokenize({"--bytes", test::writeBytes(c.dir.path() + "/empty.txt", ""), "-o", o});
  EXPECT_EQ(r.status, kExitFailed);
  EXPECT_NE(r.err.find("no bytes"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(o));
  // -o names a file.
  r = tokenize({"--bytes", c.a, "-o", c.b});
  EXPECT_EQ(r.status, kExitFailed);
  EXPECT_NE(r.err.find(c.b), std::string::npos) << r.err;
}

TEST(TokenizeCommandTest, Help) {
  Ran r = tokenize({"--help"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_EQ(r.out, tokenizeUsage());
  EXPECT_NE(r.out.find("usage: ddpctl tokenize --bytes FILE... -o DIR [--val-fraction F]"), std::string::npos);
}

TEST(TokenizeCommandTest, TheBuiltDdpctlRunsIt) {
  const std::string ddpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
  if (!fs::exists(ddpctl)) GTEST_SKIP() << ddpctl << " is not built";
  Corpus c;
  const std::string o = c.dir.path() + "/bin_out";
  auto r = test::runCli({ddpctl, "tokenize", "--bytes", c.a, c.b, "-o", o, "--val-fraction", "0.5"}, 30);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto all = bytesOf(c.text);
  const size_t val = all.size() / 2;
  EXPECT_EQ(readBack(o + "/train.bin"), std::vector<int64_t>(all.begin(), all.end() - static_cast<long>(val)));
  EXPECT_EQ(readBack(o + "/val.bin"), std::vector<int64_t>(all.end() - static_cast<long>(val), all.end()));

  auto bad = test::runCli({ddpctl, "tokenize", "--bytes", c.a, "-o", o, "--val-fraction", "2"}, 30);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("--val-fraction: '2'"), std::string::npos) << bad.err;
  auto help = test::runCli({ddpctl, "help", "tokenize"}, 30);
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_EQ(help.out, tokenizeUsage());
  auto top = test::runCli({ddpctl, "--help"}, 30);
  EXPECT_NE(top.out.find("tokenize --bytes FILE... -o DIR"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace ddp::ddpctl
