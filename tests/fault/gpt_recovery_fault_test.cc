// A language-model job recovers from a SIGKILLed worker and ends bitwise as the uninterrupted
// run: real ddp-worker processes under an in-process controller (tests/fault/fault_harness.h),
// a tiny GPT with dropout on a token file this test writes. The windows of a step depend on
// (seed, step, global index) only and the dropout masks on (seed, the rank's slice, step) (Note
// [Trainer step]), so the steps redone after the recovery draw the same data and masks. A token
// outside the vocabulary fails the job without a restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_store.h"
#include "common/split_mix_rng.h"
#include "common/tokens/token_file.h"
#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;

constexpr double kJobSeconds = 180;
constexpr int64_t kSteps = 6000;

std::string gptJob(const std::string& name, const std::string& dir) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name + "\nspec:\n"
         "  workers:\n    count: 2\n"
         "  model: {type: gpt, vocabSize: 16, contextLength: 16, layers: 1, heads: 2, dModel: 16, dropout: 0.1}\n"
         "  data:\n    dataset: tokens\n    train: {path: " + dir + "/train.bin}\n    valFraction: 0.1\n"
         "    batchSize: 4\n"
         "  optimizer: {type: adamw, lr: 0.003, weightDecay: 0.1, schedule: {type: linear, warmupSteps: 20}}\n"
         "  steps: " + std::to_string(kSteps) + "\n  seed: 21\n  maxRestarts: 3\n"
         "  eval: {everySteps: 2000, limit: 32}\n"
         "  checkpoint:\n    dir: " + dir + "/ckpt-" + name + "\n    everySteps: 200\n    keep: 2\n"
         "  timeouts:\n    heartbeatSeconds: 1\n    heartbeatMisses: 3\n    hangSeconds: 5\n"
         "    collectiveSeconds: 30\n    lastCallSeconds: 1\n";
}

// Rank 0's parameters in the newest complete checkpoint (the run's final one) and its step.
std::string finalModel(const std::string& dir, int64_t* step) {
  runtime::CheckpointStore store(dir);
  auto latest = store.findLatestComplete();
  if (!latest.isOk() || !latest->manifest) return "";
  *step = latest->manifest->step;
  auto shard = store.readShard(*latest->manifest, 0);
  if (!shard.isOk()) return "";
  auto model = shard->section("model");
  return model.isOk() ? std::string(*model) : "";
}

TEST(GptRecoveryFaultTest, AKilledWorkerIsReplacedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  std::vector<int32_t> tokens(20000);
  SplitMixRng rng(9);
  int32_t prev = 0;
  for (auto& t : tokens) prev = t = rng.next() % 8 == 0 ? static_cast<int32_t>(rng.next() % 16) : (5 * prev + 3) % 16;
  ASSERT_TRUE(tokens::writeTokenFile(h.dir() + "/train.bin", tokens, tokens::TokenDType::kUint16).isOk());

  ASSERT_TRUE(h.submit(gptJob("clean", h.dir())).isOk());
  ASSERT_TRUE(h.waitPhase("clean", "Succeeded", kJobSeconds)) << h.describeEvents("clean");
  int64_t cleanStep = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-clean", &cleanStep);
  ASSERT_FALSE(clean.empty());
  EXPECT_EQ(cleanStep, kSteps);
  // The heartbeats carried the language-model figures to the job's progress (rank 0's last).
  const controller::JobRecord cleanRecord = h.record("clean");
  ASSERT_TRUE(cleanRecord.progress.valLoss.has_value()) << h.describeEvents("clean");
  EXPECT_GT(*cleanRecord.progress.valLoss, 0);
  EXPECT_LT(*cleanRecord.progress.valLoss, std::log(16.0));
  ASSERT_TRUE(cleanRecord.progress.tokensPerSecond.has_value());
  EXPECT_GT(*cleanRecord.progress.tokensPerSecond, 0);
  ASSERT_TRUE(cleanRecord.progress.mfu.has_value());
  EXPECT_GT(*cleanRecord.progress.mfu, 0);

  ASSERT_TRUE(h.submit(gptJob("killed", h.dir())).isOk());
  ASSERT_TRUE(h.waitTraining("killed", 150, kJobSeconds)) << h.describeEvents("killed");
  const int64_t victim = h.pidOfRank("killed", 1);
  ASSERT_GT(victim, 0);
  h.signal(victim, SIGKILL);
  ASSERT_TRUE(h.waitPhase("killed", "Succeeded", kJobSeconds)) << h.describeEvents("killed");
  EXPECT_NE(h.event("killed", "Exited"), nullptr) << h.describeEvents("killed");
  EXPECT_NE(h.event("killed", "Recovered"), nullptr) << h.describeEvents("killed");
  EXPECT_EQ(h.record("killed").restarts, 1);
  int64_t step = 0;
  const std::string faulted = finalModel(h.dir() + "/ckpt-killed", &step);
  EXPECT_EQ(step, kSteps);
  EXPECT_TRUE(clean == faulted) << "the recovered run's final parameters differ from the uninterrupted run's";
  EXPECT_EQ(h.record("killed").progress.valLoss, cleanRecord.progress.valLoss);
}

// A token the model's vocabulary does not hold is the data's fault, not the run's: the worker
// that reads it exits with the bad-configuration status and the job fails at once, with no
// restart spent and the file named in its condition.
TEST(GptRecoveryFaultTest, ATokenOutsideTheVocabularyFailsTheJobAtOnceNamingTheFile) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  std::vector<int32_t> tokens(4000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % 24);  // vocabSize is 16
  ASSERT_TRUE(tokens::writeTokenFile(h.dir() + "/train.bin", tokens, tokens::TokenDType::kUint16).isOk());
  ASSERT_TRUE(h.submit(gptJob("bad-data", h.dir())).isOk());
  ASSERT_TRUE(h.waitFor(kJobSeconds, [&] { return controller::isTerminal(h.record("bad-data").phase); }))
      << h.describeEvents("bad-data");
  const controller::JobRecord r = h.record("bad-data");
  EXPECT_EQ(std::string(controller::jobPhaseName(r.phase)), "Failed") << h.describeEvents("bad-data");
  EXPECT_EQ(r.restarts, 0) << h.describeEvents("bad-data");
  std::string why;
  for (const auto& c : r.conditions) why += c.type + ": " + c.message + "\n";
  EXPECT_NE(why.find("train.bin"), std::string::npos) << why << h.describeEvents("bad-data");
  EXPECT_NE(why.find("vocab"), std::string::npos) << why;
}

}  // namespace
}  // namespace ddp
