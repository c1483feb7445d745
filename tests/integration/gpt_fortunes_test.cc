// A byte-level GPT trained end to end through `ddpctl run`: the ddpctl and ddp-worker binaries,
// 2 workers over Gloo, token files written by `ddpctl tokenize` from the fortunes corpus (the
// Debian package `fortunes`). examples/gpt-fortunes.yaml shortened: its model, 100 steps at a higher
// learning rate, a smaller validation set.
// Oracles: the uniform guess ln(256) and the corpus's unigram entropy, computed here from its
// bytes; a model that beats the latter has learnt more than byte frequencies.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"

namespace ddp {
namespace {

const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
const std::string kFortunes = "/usr/share/games/fortunes";

// The corpus's text files: regular files without a dot (not the .dat indexes nor the .u8 links).
std::vector<std::string> fortuneTexts() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kFortunes, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_symlink() || !e.is_regular_file() || name.find('.') != std::string::npos) continue;
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Entropy of the byte frequencies, in nats (the loss of the best model that ignores context).
double unigramEntropy(const std::vector<std::string>& files) {
  std::array<double, 256> counts{};
  double total = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
      counts[static_cast<unsigned char>(*it)] += 1;
      total += 1;
    }
  }
  double h = 0;
  for (double c : counts) {
    if (c > 0) h -= (c / total) * std::log(c / total);
  }
  return h;
}

TEST(GptFortunesTest, TwoWorkersLearnBelowTheUnigramEntropy) {
  const std::vector<std::string> texts = fortuneTexts();
  if (texts.empty()) GTEST_SKIP() << kFortunes << " holds no text files: install the Debian package fortunes";
  const double unigram = unigramEntropy(texts);
  ASSERT_GT(unigram, 1.0);

  test::TempDir dir("gpt_fortunes");
  std::vector<std::string> tokenize = {kDdpctl, "tokenize", "--bytes"};
  tokenize.insert(tokenize.end(), texts.begin(), texts.end());
  tokenize.insert(tokenize.end(), {"-o", dir.path() + "/data"});
  auto tok = test::runCli(tokenize, 60);
  ASSERT_EQ(tok.exitCode, 0) << tok.err;

  const std::string job =
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: gpt-fortunes-short}\nspec:\n"
      "  workers: {count: 2}\n"
      "  model: {type: gpt, vocabSize: 256, contextLength: 128, layers: 4, heads: 4, dModel: 128}\n"
      "  data:\n"
      "    dataset: tokens\n"
      "    train: {path: " + dir.path() + "/data/train.bin}\n"
      "    val: {path: " + dir.path() + "/data/val.bin}\n"
      "    batchSize: 16\n"
      "  optimizer:\n"
      "    type: adamw\n    lr: 0.003\n    betas: [0.9, 0.95]\n    weightDecay: 0.1\n    maxGradNorm: 1.0\n"
      "    schedule: {type: cosine, warmupSteps: 10, minLr: 0.0003}\n"
      "  steps: 100\n  seed: 3\n"
      "  eval: {everySteps: 50, limit: 128, batchSize: 16}\n";
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << job;
  auto r = test::runCli({kDdpctl, "run", path, "--log-format", "json"}, 600);
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  int evals = 0;
  for (const auto& line : r.outLines()) evals += line.find("\"event\":\"eval\"") != std::string::npos;
  EXPECT_GE(evals, 2) << r.out;  // steps 50 and 100
  const double valLoss = test::lastJsonNumber(r, "eval", "test_loss");
  std::printf("gpt on fortunes, 2 workers, 100 steps: validation loss %.4f nats/byte (ln 256 = %.4f, unigram "
              "entropy %.4f), ddpctl wall time %.1f s\n", valLoss, std::log(256.0), unigram, r.seconds);
  ASSERT_GT(valLoss, 0) << r.out;
  EXPECT_LT(valLoss, 0.75 * std::log(256.0));
  EXPECT_LT(valLoss, unigram);
}

}  // namespace
}  // namespace ddp
