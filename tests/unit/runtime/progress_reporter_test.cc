// ProgressReporter's lines for a language model (Note [Progress line contract]): the eval, step
// and done lines carry the validation loss, perplexity and tokens per second, and keep every
// field the contract names for the other models.
#include "worker/training/progress_reporter.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

namespace ddp::runtime {
namespace {

std::string capture(LogFormat format, const std::function<void(ProgressReporter&)>& write) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  {
    ProgressReporter r(format, f);
    write(r);
  }
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ProgressReporterTest, LanguageModelLinesCarryValidationLossAndTokens) {
  const double loss = 2.0;
  const std::string json = capture(LogFormat::kJson, [&](ProgressReporter& r) {
    r.eval({50, 1, loss, 0.25, 3.0, /*languageModel=*/true});
    StepReport s;
    s.step = 50;
    s.totalSteps = 100;
    s.samplesPerSecond = 10;
    s.tokensPerSecond = 1280;
    r.step(s);
    r.done(100, 1, 0.25, 6.0, loss);
  });
  EXPECT_TRUE(has(json, "\"event\":\"eval\",\"step\":50,\"epoch\":1,\"test_loss\":2,\"val_loss\":2,\"perplexity\":7.38906"))
      << json;
  EXPECT_TRUE(has(json, "\"test_accuracy\":0.25")) << json;
  EXPECT_TRUE(has(json, "\"samples_per_s\":10,\"tokens_per_s\":1280")) << json;
  EXPECT_TRUE(has(json, "\"event\":\"done\",\"step\":100,\"epoch\":1,\"test_accuracy\":0.25,\"val_loss\":2")) << json;

  const std::string human = capture(LogFormat::kHuman, [&](ProgressReporter& r) {
    r.eval({50, 1, loss, 0.25, 3.0, true});
    StepReport s;
    s.step = 50;
    s.totalSteps = 100;
    s.tokensPerSecond = 1280;
    r.step(s);
    r.done(100, 1, 0.25, 6.0, loss);
  });
  EXPECT_TRUE(has(human, "step 50: validation loss 2.0000 (perplexity 7.39)  next-token accuracy 25.00%")) << human;
  EXPECT_TRUE(has(human, "step 50/100  loss")) << human;
  EXPECT_TRUE(has(human, "1280 tokens/s")) << human;
  EXPECT_TRUE(has(human, "done: 100 steps, final validation loss 2.0000 (perplexity 7.39)")) << human;
}

TEST(ProgressReporterTest, ClassifierLinesAreUnchanged) {
  const std::string json = capture(LogFormat::kJson, [](ProgressReporter& r) {
    r.eval({10, 2, 0.5, 0.875, 1.0});
    StepReport s;
    s.step = 10;
    s.epoch = 2;
    s.samplesPerSecond = 100;
    r.step(s);
    r.done(10, 2, 0.875, 1.0);
  });
  EXPECT_TRUE(has(json, "{\"event\":\"eval\",\"step\":10,\"epoch\":2,\"test_loss\":0.5,\"test_accuracy\":0.875,")) << json;
  EXPECT_FALSE(has(json, "val_loss")) << json;
  EXPECT_FALSE(has(json, "tokens_per_s")) << json;
  EXPECT_TRUE(has(json, "\"samples_per_s\":100,\"eta_s\"")) << json;
}

}  // namespace
}  // namespace ddp::runtime
