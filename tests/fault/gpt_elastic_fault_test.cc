// Elastic membership of a language-model job with real processes (Note [Elastic membership] in
// controller/jobs/membership/membership.h): an in-process controller starts three ddp-worker processes
// training the tiny GPT of gpt_fault_job.h (workers min 2, count and max 3, lastCall 1 s); the
// test SIGKILLs rank 2 with the launcher's replacement held back, so the next generation goes on
// with the two survivors, then releases the replacement, which grows the job back to three.
// Oracle: the same job on a fixed 2 workers x 3 windows (the same global batch of 6). Every step
// reads the same windows at any world size (Note [Token windows]) and plain DDP heals from a
// survivor's state (Note [Healing from live peers]), so the elastic run follows the fixed one up
// to the summation order of another world size: its validation loss must match the fixed run's
// to 1e-3 (relative), every rank must hold the same parameters, and the generations must be
// exactly 3, 2, 3 (as ElasticMembershipTest asserts for the MLP).
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/fault/fault_harness.h"
#include "tests/fault/gpt_fault_job.h"

namespace ddp {
namespace {

using test::FaultHarness;

constexpr double kChangeSeconds = 30;  // bound of one membership change (they take ~2 s)
constexpr double kJobSeconds = 180;
// Long enough for both changes: the shrink is at about step 150-500, the growth a few hundred
// steps later, each change a few seconds without steps.
constexpr int64_t kSteps = 2500;

std::string jobYaml(const std::string& name, const std::string& dir, bool elastic) {
  test::GptFaultJob j;
  j.workers = elastic ? "count: 3, min: 2, max: 3" : "count: 2";
  j.batchSize = elastic ? 2 : 3;
  j.steps = kSteps;
  j.dropout = 0;
  j.checkpointEverySteps = 100;
  j.timeouts = "heartbeatSeconds: 0.5\n    heartbeatMisses: 4\n    hangSeconds: 5\n"
               "    collectiveSeconds: 6\n    lastCallSeconds: 1\n";
  j.extraSpec = "  commThreadPriority: normal\n";  // three workers on two cores: no real-time comm threads
  return test::gptFaultJobYaml(name, dir, j);
}

bool waitGeneration(FaultHarness& h, const std::string& job, size_t count, int world) {
  return h.waitFor(kChangeSeconds, [&] {
    const auto sizes = h.generationSizes(job);
    return sizes.size() >= count && sizes[count - 1] == world;
  });
}

TEST(GptElasticFaultTest, ALostWorkerShrinksTheJobAndItsReplacementGrowsItBack) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(test::writeGptFaultTokens(h.dir() + "/train.bin").isOk());
  const std::string fixed = "fixed", job = "elastic";
  ASSERT_TRUE(h.submit(jobYaml(fixed, h.dir(), false)).isOk());
  ASSERT_TRUE(h.waitPhase(fixed, "Succeeded", kJobSeconds)) << h.describeEvents(fixed);

  ASSERT_TRUE(h.submit(jobYaml(job, h.dir(), true)).isOk());
  ASSERT_TRUE(h.waitTraining(job, 100, kJobSeconds)) << h.describeEvents(job);
  h.controller().launcher().holdReplacements(job, true);
  const int64_t victim = h.pidOfRank(job, 2);
  ASSERT_GT(victim, 0) << h.describeEvents(job);
  ASSERT_LT(h.record(job).progress.step, kSteps / 2) << "the job must still be running when rank 2 is killed";
  h.signal(victim, SIGKILL);
  ASSERT_TRUE(waitGeneration(h, job, 2, 2)) << h.describeEvents(job);
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] { return h.event(job, "Recovered") != nullptr; })) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1) << "the lost worker counts as a failure restart";
  const int64_t atTwo = h.record(job).progress.step;
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] { return h.record(job).progress.step >= atTwo + 100; }))
      << h.describeEvents(job);
  h.controller().launcher().holdReplacements(job, false);
  ASSERT_TRUE(waitGeneration(h, job, 3, 3)) << h.describeEvents(job);
  ASSERT_TRUE(h.waitPhase(job, "Succeeded", kJobSeconds)) << h.describeEvents(job);
  // 3, 2, 3 and no other generation; the growth is a membership change, not a failure restart.
  EXPECT_EQ(h.generationSizes(job), (std::vector<int>{3, 2, 3})) << h.describeEvents(job);
  EXPECT_NE(h.event(job, "WorkersJoined"), nullptr) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1);
  EXPECT_EQ(h.record(job).progress.step, kSteps);

  // Every rank of the last generation holds the same parameters.
  int64_t step = 0;
  const std::string rank0 = test::finalModel(h.dir() + "/ckpt-" + job, &step, 0);
  ASSERT_FALSE(rank0.empty());
  EXPECT_EQ(step, kSteps);
  for (int r = 1; r < 3; ++r) {
    EXPECT_TRUE(test::finalModel(h.dir() + "/ckpt-" + job, &step, r) == rank0) << "rank " << r;
  }
  const auto want = h.record(fixed).progress.valLoss, got = h.record(job).progress.valLoss;
  ASSERT_TRUE(want && got);
  std::printf("validation loss: elastic %.9f, fixed %.9f\n", *got, *want);

  EXPECT_LT(*got, 0.75 * std::log(16.0));
  EXPECT_NEAR(*got, *want, 1e-3 * *want);  // about 1e-8 apart in practice
}

}  // namespace
}  // namespace ddp
