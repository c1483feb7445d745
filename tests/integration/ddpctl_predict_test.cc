// `ddpctl predict` and `ddpctl generate` (docs/MODELS.md, "Predict and generate") with real
// processes. Oracles: the independent numpy reader (tests/integration/safetensors_numpy.py)
// recomputes predict's outputs from the exported file, on the samples standardized as the job's
// data was (so predict must standardize them the same way); a GPT trained on a repeating text
// generates that text greedily; the same seed samples the same text.
#include <gtest/gtest.h>

#include <random>

#include "tests/integration/model_jobs.h"
#include "tests/support/user_data_writers.h"

namespace ddp {
namespace {

using test::kDdpctl;
using test::kPython;
using test::kScript;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void numpyCheck(const test::TempDir& dir, const std::string& ckpt, const std::string& inputs, const std::string& outputs) {
  const std::string model = dir.path() + "/model.safetensors";
  auto e = test::runCli({kDdpctl, "export", "--checkpoint-dir", ckpt, "-o", model}, 60);
  ASSERT_EQ(e.exitCode, 0) << e.err;
  auto r = test::runCli({kPython, kScript, "forward", model, inputs, outputs}, 120);
  std::printf("%s%s", r.out.c_str(), r.err.c_str());
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
}

TEST(DdpctlPredictTest, AClassifierPredictsOnStandardizedSamples) {
  if (!test::numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  test::TempDir dir("ddpctl_predict_test");
  const int n = 96, f = 6;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(1.f, 2.f);
  std::vector<float> x(n * f);
  std::vector<int64_t> y(n);
  for (int i = 0; i < n; ++i) {
    y[i] = i % 3;
    for (int j = 0; j < f; ++j) x[i * f + j] = normal(rng) + (j == y[i] ? 3.f : 0.f);
  }
  test::writeNpy<float>(dir.path() + "/x.npy", "<f4", {n, f}, x);
  test::writeNpy<int64_t>(dir.path() + "/y.npy", "<i8", {n}, y);
  const std::string ckpt = test::train(
      dir, "predict-mlp",
      "  model: {type: mlp, hidden: [8]}\n"
      "  data: {dataset: npy, train: {features: " + dir.path() + "/x.npy, targets: " + dir.path() +
          "/y.npy}, standardize: {mean: [1.0], std: [2.0]}, batchSize: 16}\n"
          "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 2\n");
  std::vector<float> samples(x.begin(), x.begin() + 4 * f), scaled(samples);
  for (float& v : scaled) v = (v - 1.f) / 2.f;
  test::writeNpy<float>(dir.path() + "/samples.npy", "<f4", {4, f}, samples);
  test::writeNpy<float>(dir.path() + "/scaled.npy", "<f4", {4, f}, scaled);
  const std::string out = dir.path() + "/pred.npy";
  auto p = test::runCli({kDdpctl, "predict", "--checkpoint-dir", ckpt, "--input", dir.path() + "/samples.npy", "-o", out}, 60);
  ASSERT_EQ(p.exitCode, 0) << p.err;
  EXPECT_TRUE(contains(p.out, "wrote " + out + ": 4 predictions of job predict-mlp")) << p.out;
  numpyCheck(dir, ckpt, dir.path() + "/scaled.npy", out);
  test::writeNpy<float>(dir.path() + "/wide.npy", "<f4", {2, f + 1}, std::vector<float>(2 * (f + 1), 0.f));
  auto bad = test::runCli({kDdpctl, "predict", "--checkpoint-dir", ckpt, "--input", dir.path() + "/wide.npy"}, 60);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_TRUE(contains(bad.err, dir.path() + "/wide.npy: shape [2, 7] is not (N, ...) samples of 6 values")) << bad.err;
}

class GptPredictTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("ddpctl_predict_test");
    std::string text;
    for (int i = 0; i < 400; ++i) text += "the cat sat. ";
    std::ofstream(dir_->path() + "/train.txt") << text;
    ckpt_ = test::train(*dir_, "predict-gpt",
                        "  model: {type: gpt, contextLength: 16, layers: 2, heads: 2, dModel: 32}\n"
                        "  data: {dataset: text, train: {path: " + dir_->path() + "/train.txt}, batchSize: 16}\n"
                        "  optimizer: {type: adamw, lr: 0.01}\n  steps: 200\n  seed: 5\n");
  }
  static void TearDownTestSuite() { delete dir_; }
  static test::CliResult generate(std::vector<std::string> more) {
    std::vector<std::string> argv = {kDdpctl, "generate", "--checkpoint-dir", ckpt_};
    argv.insert(argv.end(), more.begin(), more.end());
    return test::runCli(argv, 120);
  }
  static inline test::TempDir* dir_ = nullptr;
  static inline std::string ckpt_;
};

TEST_F(GptPredictTest, GreedyGenerationRepeatsThePatternItLearned) {
  auto r = generate({"--prompt", "the cat", "--tokens", "32", "--top-k", "1"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "the cat sat. the cat sat. the cat sat. \n");
  auto t0 = generate({"--prompt", "the cat", "--tokens", "32", "--temperature", "0", "--top-k", "5"});
  EXPECT_EQ(t0.out, r.out) << "temperature 0 is greedy too";
}

TEST_F(GptPredictTest, TheSameSeedSamplesTheSameTokens) {
  auto a = generate({"--prompt-tokens", "116,104", "--tokens", "20", "--temperature", "2", "--seed", "9"});
  auto b = generate({"--prompt-tokens", "116,104", "--tokens", "20", "--temperature", "2", "--seed", "9"});
  ASSERT_EQ(a.exitCode, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(std::count(a.out.begin(), a.out.end(), ','), 21) << a.out;
  EXPECT_EQ(a.out.rfind("116,104,", 0), 0u) << a.out;
}

TEST_F(GptPredictTest, AnOutOfVocabularyPromptTokenIsNamed) {
  auto r = generate({"--prompt-tokens", "1,300"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(contains(r.err, "--prompt-tokens: token 300 is outside the vocabulary [0, 256)")) << r.err;
}

TEST_F(GptPredictTest, PredictGivesTheLogitsNumpyComputes) {
  if (!test::numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  std::vector<int32_t> tokens(2 * 16);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>("the cat sat. "[i % 13]);
  test::writeNpy<int32_t>(dir_->path() + "/tokens.npy", "<i4", {2, 16}, tokens);
  const std::string out = dir_->path() + "/logits.npy";
  auto p = test::runCli({kDdpctl, "predict", "--checkpoint-dir", ckpt_, "--input", dir_->path() + "/tokens.npy", "-o", out}, 60);
  ASSERT_EQ(p.exitCode, 0) << p.err;
  numpyCheck(*dir_, ckpt_, dir_->path() + "/tokens.npy", out);
}

}  // namespace
}  // namespace ddp
