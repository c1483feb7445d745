// Elastic membership with real processes (Note [Elastic membership] in
// controller/jobs/membership/membership.h): an in-process controller starts four real ddp-worker processes
// (workers min 2, count and max 4, lastCall 2 s); the test SIGKILLs one by PID with the
// launcher's replacements held back, so the next generation goes on with the three survivors;
// releasing the replacement grows it back to four without a failure restart; a scale to 3 and
// back to 4 does the same through the scale route's JobManager call. The test depends on
// membership and completion only, not on the step training resumes at.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;

constexpr double kChangeSeconds = 30;  // bound of one membership change (they take ~2 s)
constexpr double kJobSeconds = 300;  // a bound, not an expectation: under a full parallel test run the job is slow

std::string elasticJobYaml(const std::string& name, const std::string& checkpointDir, int64_t steps) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name +
         "\nspec:\n"
         "  workers:\n    count: 4\n    min: 2\n    max: 4\n"
         "  model:\n    type: mlp\n    hidden: [32]\n"
         "  data:\n    dataset: synthetic\n    batchSize: 16\n"
         "    synthetic:\n      samples: 4096\n      features: 32\n      classes: 4\n"
         "  optimizer:\n    type: sgd\n    lr: 0.05\n    momentum: 0.9\n"
         "  steps: " + std::to_string(steps) + "\n  seed: 11\n  maxRestarts: 3\n"
         "  checkpoint:\n    dir: " + checkpointDir + "\n    everySteps: 50\n    keep: 2\n"
         "  timeouts:\n    heartbeatSeconds: 0.5\n    heartbeatMisses: 4\n    hangSeconds: 5\n"
         "    collectiveSeconds: 6\n    lastCallSeconds: 2\n"
         "  commThreadPriority: normal\n";  // four workers on two cores: no real-time comm threads
}

std::string sizesText(const std::vector<int>& sizes) {
  std::string s;
  for (int n : sizes) s += std::to_string(n) + " ";
  return s;
}

// Waits until a generation after the first `after` ones has `world` members and the job is Running;
// returns its index (0-based), or -1. (A worker that dies during a change adds generations.)
int waitGeneration(FaultHarness& h, const std::string& job, int after, int world) {
  int found = -1;
  h.waitFor(kChangeSeconds, [&] {
    const auto sizes = h.generationSizes(job);
    for (size_t i = static_cast<size_t>(after); i < sizes.size(); ++i) {
      if (sizes[i] == world) found = static_cast<int>(i);
    }
    return found >= 0 && h.record(job).phase == controller::JobPhase::kRunning;
  });
  return h.record(job).phase == controller::JobPhase::kRunning ? found : -1;
}

// The last lines of every worker's log (local launcher: STATE/jobs/<job>/logs/<id>.log), for a
// failure's message.
std::string workerLogTails(FaultHarness& h, const std::string& job) {
  std::string out;
  for (int slot = 0; slot < 4; ++slot) {
    const std::string id = job + "-w" + std::to_string(slot);
    std::ifstream in(h.dir() + "/state/jobs/" + job + "/logs/" + id + ".log");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    out += "--- " + id + "\n";
    for (size_t i = lines.size() > 60 ? lines.size() - 60 : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  }
  return out;
}

TEST(ElasticMembershipTest, ALostWorkerShrinksTheJobAndItsReplacementOrAScaleGrowsItBack) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string job = "elastic";
  ASSERT_TRUE(h.submit(elasticJobYaml(job, h.dir() + "/ckpt", 6000)).isOk());
  ASSERT_TRUE(h.waitTraining(job, 20, kJobSeconds)) << h.describeEvents(job);
  ASSERT_EQ(h.generationSizes(job), std::vector<int>{4});

  // Shrink: rank 3 is killed and its replacement held back; after lastCall the survivors go on.
  h.controller().launcher().holdReplacements(job, true);
  const int64_t victim = h.pidOfRank(job, 3);
  ASSERT_GT(victim, 0);
  h.signal(victim, SIGKILL);
  const int shrunk = waitGeneration(h, job, 1, 3);
  ASSERT_EQ(shrunk, 1) << sizesText(h.generationSizes(job)) << "\n" << h.describeEvents(job);
  // (Events are written by the controller's ticker: one read may see a generation's first event
  // before the next.)
  ASSERT_TRUE(h.waitFor(5, [&] { return h.event(job, "MembershipChanged") != nullptr; })) << h.describeEvents(job);
  EXPECT_EQ(h.event(job, "MembershipChanged")->message,
            "generation 2: 3 worker(s) (elastic-w3 lost, no replacement within lastCall 2 s)");
  // Training goes on with three: every rank of generation 2 steps.
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] { return h.event(job, "Recovered") != nullptr; })) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1) << "the lost worker counts as a failure restart";

  // Grow: the replacement is released, joins late, and the next generation takes it in.
  h.controller().launcher().holdReplacements(job, false);
  const int grown = waitGeneration(h, job, shrunk + 1, 4);
  ASSERT_GT(grown, shrunk) << sizesText(h.generationSizes(job)) << "\n" << h.describeEvents(job)
                           << workerLogTails(h, job);
  EXPECT_NE(h.event(job, "WorkersJoined"), nullptr) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1) << "a membership change is not a failure restart";

  // Scale down to 3 (the highest slot retires) and back up to 4.
  auto scaledDown = h.jobs().scale(job, 3);
  ASSERT_TRUE(scaledDown.isOk()) << scaledDown.status();
  const int down = waitGeneration(h, job, grown + 1, 3);
  ASSERT_GT(down, grown) << sizesText(h.generationSizes(job)) << "\n" << h.describeEvents(job)
                         << workerLogTails(h, job);
  EXPECT_NE(h.event(job, "ScaledDown"), nullptr) << h.describeEvents(job);
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] {
    auto again = h.jobs().scale(job, 4);
    return again.isOk();
  })) << "the retired worker exits, then the job scales up again\n"
      << h.describeEvents(job);
  const int up = waitGeneration(h, job, down + 1, 4);
  ASSERT_GT(up, down) << sizesText(h.generationSizes(job)) << "\n" << h.describeEvents(job) << workerLogTails(h, job);
  EXPECT_EQ(h.record(job).restarts, 1);
  {
    auto spec = h.jobs().spec(job);
    ASSERT_TRUE(spec.isOk());
    EXPECT_EQ(spec->workers.count, 4);
    // The first scale pinned the submitted global batch (16 x 4): the scales kept it.
    EXPECT_EQ(spec->data.globalBatchSize, 64);
  }

  ASSERT_TRUE(h.waitPhase(job, "Succeeded", kJobSeconds)) << h.describeEvents(job);
  // The generations the test asked for, in this order and no other: every survivor of a change
  // is back in time for the next generation (abort releases a rank waiting inside a send, Note
  // [Abortable waits]; before that, a survivor aborted mid-send waited out its collective timeout
  // and joined one generation late).
  EXPECT_EQ(h.generationSizes(job), (std::vector<int>{4, 3, 4, 3, 4})) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1);
}

}  // namespace
}  // namespace ddp
