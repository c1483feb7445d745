// A language-model job recovers from a SIGKILLed worker, a hung (SIGSTOPped) one and a rank
// stalled inside training, and ends bitwise as the uninterrupted run: real ddp-worker processes under an in-process controller
// (tests/fault/fault_harness.h), a tiny GPT with dropout on a token file this test writes
// (gpt_fault_job.h). The windows of a step depend on (seed, step, global index) only and the
// dropout masks on (seed, the rank's slice, step) (Note [Trainer step]), so the steps redone after
// the recovery draw the same data and masks.
// A token outside the vocabulary fails the job without a restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/fault/fault_harness.h"
#include "tests/fault/gpt_fault_job.h"

namespace ddp {
namespace {

using test::FaultHarness;

constexpr double kJobSeconds = 180;
// Long enough that the fault (past step 150, seen through 1 s heartbeats) lands mid-run: on an
// idle machine the job does about 1600 steps a second, and with 4000 steps a run could end
// before a heartbeat past step 150 reached the controller (1 of 3 runs failed so, 2026-11-28).
constexpr int64_t kSteps = 8000;

test::GptFaultJob job() {
  test::GptFaultJob j;
  j.steps = kSteps;
  return j;
}

// Writes the token file and runs the uninterrupted job "clean"; its final model ("" on failure).
std::string cleanRun(FaultHarness& h) {
  EXPECT_TRUE(test::writeGptFaultTokens(h.dir() + "/train.bin").isOk());
  EXPECT_TRUE(h.submit(test::gptFaultJobYaml("clean", h.dir(), job())).isOk());
  EXPECT_TRUE(h.waitPhase("clean", "Succeeded", kJobSeconds)) << h.describeEvents("clean");
  int64_t step = 0;
  std::string model = test::finalModel(h.dir() + "/ckpt-clean", &step);
  EXPECT_EQ(step, kSteps);
  return model;
}

// The job `name` with `sig` sent to rank 1 past step 150 ends bitwise as the clean run.
void expectRecoveredBitwise(FaultHarness& h, const std::string& clean, const std::string& name, int sig) {
  int64_t step = 0;
  const std::string dir = h.dir() + "/ckpt-" + name;
  const std::string faulted = test::runWithFault(h, name, test::gptFaultJobYaml(name, h.dir(), job()), dir,
                                                 /*rank=*/1, sig, 150, kJobSeconds, &step);
  EXPECT_EQ(step, kSteps);
  EXPECT_TRUE(clean == faulted) << "the recovered run's final parameters differ from the uninterrupted run's";
  EXPECT_EQ(h.record(name).progress.valLoss, h.record("clean").progress.valLoss);
}

TEST(GptRecoveryFaultTest, AKilledWorkerIsReplacedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string clean = cleanRun(h);
  ASSERT_FALSE(clean.empty()) << h.describeEvents("clean");
  // The heartbeats carried the language-model figures to the job's progress (rank 0's last).
  const controller::JobRecord r = h.record("clean");
  ASSERT_TRUE(r.progress.valLoss.has_value()) << h.describeEvents("clean");
  EXPECT_GT(*r.progress.valLoss, 0);
  EXPECT_LT(*r.progress.valLoss, std::log(16.0));
  ASSERT_TRUE(r.progress.tokensPerSecond.has_value());
  EXPECT_GT(*r.progress.tokensPerSecond, 0);
  ASSERT_TRUE(r.progress.mfu.has_value());
  EXPECT_GT(*r.progress.mfu, 0);
  expectRecoveredBitwise(h, clean, "killed", SIGKILL);
}

// A hung worker: it stops heartbeating, the controller names it Unresponsive, kills it and starts
// a replacement; the survivor keeps its process and hands the new generation its state (Note
// [Healing from live peers]), so at most the interrupted step is redone.
TEST(GptRecoveryFaultTest, AHungWorkerIsReplacedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string clean = cleanRun(h);
  ASSERT_FALSE(clean.empty()) << h.describeEvents("clean");
  expectRecoveredBitwise(h, clean, "hung", SIGSTOP);
  const std::string survivorLog = h.launchedWorkerLog("hung", "hung-w0");
  EXPECT_NE(survivorLog.find("resumed from the state of rank 0"), std::string::npos) << survivorLog;
}

// A rank stalled inside training (DDP_TEST_STALL: it keeps heartbeating but never issues the
// next collective, Note [Injected faults]) is named CollectiveStuck after hangSeconds; the job
// recovers and ends bitwise as the uninterrupted run.
TEST(GptRecoveryFaultTest, ARankStalledInsideTrainingIsNamedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string clean = cleanRun(h);
  ASSERT_FALSE(clean.empty()) << h.describeEvents("clean");
  // The local launcher passes its environment on to the workers it starts from here on; the
  // stall applies to the job's first generation only.
  ::setenv("DDP_TEST_STALL", "1:1000:60", 1);
  struct Unset {
    ~Unset() { ::unsetenv("DDP_TEST_STALL"); }
  } unset;
  ASSERT_TRUE(h.submit(test::gptFaultJobYaml("stalled", h.dir(), job())).isOk());
  ASSERT_TRUE(h.waitPhase("stalled", "Succeeded", kJobSeconds)) << h.describeEvents("stalled");
  auto verdict = h.event("stalled", "CollectiveStuck");
  ASSERT_NE(verdict, nullptr) << h.describeEvents("stalled");
  EXPECT_NE(verdict->message.find("rank 1 never reached allreduce #"), std::string::npos) << verdict->message;
  EXPECT_NE(h.event("stalled", "Recovered"), nullptr) << h.describeEvents("stalled");
  EXPECT_EQ(h.record("stalled").restarts, 1);
  int64_t step = 0;
  const std::string faulted = test::finalModel(h.dir() + "/ckpt-stalled", &step);
  EXPECT_EQ(step, kSteps);
  EXPECT_TRUE(clean == faulted) << "the recovered run's final parameters differ from the uninterrupted run's";
  EXPECT_EQ(h.record("stalled").progress.valLoss, h.record("clean").progress.valLoss);
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
  ASSERT_TRUE(h.submit(test::gptFaultJobYaml("bad-data", h.dir())).isOk());
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
