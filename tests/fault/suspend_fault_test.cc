// Suspend and resume with real processes (Note [Suspended jobs] in
// controller/jobs/lifecycle/suspension.h): an in-process controller with the local launcher runs
// real ddp-worker processes over loopback; the job is suspended while it trains (its workers hear
// `stop`, write a checkpoint and exit; the job ends Suspended with no process left), then resumed
// (new workers start from that checkpoint). The run must end bitwise as an uninterrupted one.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;
using test::finalModel;

constexpr double kJobSeconds = 120;  // bound of any wait on a job (they finish in seconds)

TEST(SuspendFaultTest, ASuspendedAndResumedJobEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("clean", h.dir() + "/ckpt-clean", test::kMidRunSteps, 0)).isOk());
  ASSERT_TRUE(h.waitPhase("clean", "Succeeded", kJobSeconds)) << h.describeEvents("clean");
  int64_t cleanStep = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-clean", &cleanStep);
  ASSERT_FALSE(clean.empty());
  ASSERT_EQ(cleanStep, test::kMidRunSteps);

  // maxRestarts 0: a suspension is not a failure and spends no restart.
  const std::string dir = h.dir() + "/ckpt-paused";
  ASSERT_TRUE(h.submit(faultJobYaml("paused", dir, test::kMidRunSteps, 0)).isOk());
  ASSERT_TRUE(h.waitTraining("paused", 200, kJobSeconds)) << h.describeEvents("paused");
  std::vector<std::pair<int64_t, int64_t>> running;  // (pid, start time) of each rank
  for (int rank : {0, 1}) {
    const int64_t pid = h.pidOfRank("paused", rank);
    ASSERT_GT(pid, 0) << "rank " << rank;
    running.emplace_back(pid, test::processStartTime(pid));
  }
  ASSERT_TRUE(h.jobs().suspend("paused").isOk());
  ASSERT_TRUE(h.waitPhase("paused", "Suspended", kJobSeconds)) << h.describeEvents("paused");
  for (const auto& [pid, start] : running) {
    EXPECT_NE(test::processStartTime(pid), start) << "worker " << pid << " outlived the suspension";
  }
  int64_t pausedAt = 0;
  ASSERT_FALSE(finalModel(dir, &pausedAt).empty()) << "the suspension wrote no checkpoint";
  EXPECT_GT(pausedAt, 200);
  EXPECT_LT(pausedAt, test::kMidRunSteps) << "the job was suspended after it had finished";

  ASSERT_TRUE(h.jobs().resume("paused").isOk());
  ASSERT_TRUE(h.waitPhase("paused", "Succeeded", kJobSeconds)) << h.describeEvents("paused");
  int64_t step = 0;
  const std::string resumed = finalModel(dir, &step);
  EXPECT_EQ(step, test::kMidRunSteps);
  // Not a fresh start (which would end bitwise equal too): every rank resumed at the step the
  // suspension's checkpoint holds.
  for (const std::string id : {"paused-w0", "paused-w1"}) {
    const std::string log = h.launchedWorkerLog("paused", id);
    EXPECT_NE(log.find("at step " + std::to_string(pausedAt) + ","), std::string::npos) << id << ":\n" << log;
  }
  EXPECT_TRUE(clean == resumed) << "the resumed run's final parameters differ from the uninterrupted run's";
  EXPECT_EQ(h.record("paused").progress.testAccuracy, h.record("clean").progress.testAccuracy);
  EXPECT_EQ(h.record("paused").restarts, 0);
}

}  // namespace
}  // namespace ddp
