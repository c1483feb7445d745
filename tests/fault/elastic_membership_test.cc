// Elastic membership with real processes (Note [Elastic membership] in
// controller/jobs/membership.h): an in-process controller starts four real ddp-worker processes
// (workers min 2, count and max 4, lastCall 2 s); the test SIGKILLs one by PID with the
// launcher's replacements held back, so the next generation goes on with the three survivors;
// releasing the replacement grows it back to four without a failure restart; a scale to 3 and
// back to 4 does the same through the scale route's JobManager call. The test depends on
// membership and completion only, not on the step training resumes at.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;

constexpr double kChangeSeconds = 30;  // bound of one membership change (they take ~2 s)
constexpr double kJobSeconds = 120;

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
         "    collectiveSeconds: 30\n    lastCallSeconds: 2\n";
}

// The world sizes of the job's generations, in order, from its RendezvousClosed events.
std::vector<int> generationSizes(FaultHarness& h, const std::string& job) {
  std::vector<int> out;
  for (const auto& e : h.events(job)) {
    if (e.reason != "RendezvousClosed") continue;
    const auto with = e.message.find(" with ");
    if (with != std::string::npos) out.push_back(std::stoi(e.message.substr(with + 6)));
  }
  return out;
}

std::string sizesText(const std::vector<int>& sizes) {
  std::string s;
  for (int n : sizes) s += std::to_string(n) + " ";
  return s;
}

// Waits until the job has `count` generations and the last one has `world` members, Running.
bool waitGeneration(FaultHarness& h, const std::string& job, size_t count, int world) {
  return h.waitFor(kChangeSeconds, [&] {
    const auto sizes = generationSizes(h, job);
    return sizes.size() >= count && sizes[count - 1] == world &&
           h.record(job).phase == controller::JobPhase::kRunning;
  });
}

const controller::JobEvent* lastEvent(const std::vector<controller::JobEvent>& events, const std::string& reason) {
  const controller::JobEvent* found = nullptr;
  for (const auto& e : events) {
    if (e.reason == reason) found = &e;
  }
  return found;
}

TEST(ElasticMembershipTest, ALostWorkerShrinksTheJobAndItsReplacementOrAScaleGrowsItBack) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string job = "elastic";
  ASSERT_TRUE(h.submit(elasticJobYaml(job, h.dir() + "/ckpt", 3000)).isOk());
  ASSERT_TRUE(h.waitTraining(job, 20, kJobSeconds)) << h.describeEvents(job);
  ASSERT_EQ(generationSizes(h, job), std::vector<int>{4});

  // Shrink: rank 3 is killed and its replacement held back; after lastCall the survivors go on.
  h.controller().launcher().holdReplacements(job, true);
  const int64_t victim = h.pidOfRank(job, 3);
  ASSERT_GT(victim, 0);
  h.signal(victim, SIGKILL);
  ASSERT_TRUE(waitGeneration(h, job, 2, 3)) << sizesText(generationSizes(h, job)) << "\n" << h.describeEvents(job);
  {
    const auto events = h.events(job);
    const auto* change = lastEvent(events, "MembershipChanged");
    ASSERT_NE(change, nullptr) << h.describeEvents(job);
    EXPECT_NE(change->message.find("generation 2: 3 worker(s) (elastic-w3 lost, no replacement within lastCall 2 s)"),
              std::string::npos)
        << change->message;
  }
  // Training goes on with three: every rank of generation 2 steps.
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] { return h.event(job, "Recovered") != nullptr; })) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1) << "the lost worker counts as a failure restart";

  // Grow: the replacement is released, joins late, and the next generation takes it in.
  h.controller().launcher().holdReplacements(job, false);
  ASSERT_TRUE(waitGeneration(h, job, 3, 4)) << sizesText(generationSizes(h, job)) << "\n" << h.describeEvents(job);
  EXPECT_NE(h.event(job, "WorkersJoined"), nullptr) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1) << "a membership change is not a failure restart";

  // Scale down to 3 (the highest slot retires) and back up to 4.
  auto down = h.jobs().scale(job, 3);
  ASSERT_TRUE(down.isOk()) << down.status();
  ASSERT_TRUE(waitGeneration(h, job, 4, 3)) << sizesText(generationSizes(h, job)) << "\n" << h.describeEvents(job);
  EXPECT_NE(h.event(job, "ScaledDown"), nullptr) << h.describeEvents(job);
  ASSERT_TRUE(h.waitFor(kChangeSeconds, [&] {
    auto again = h.jobs().scale(job, 4);
    return again.isOk();
  })) << "the retired worker exits, then the job scales up again\n"
      << h.describeEvents(job);
  ASSERT_TRUE(waitGeneration(h, job, 5, 4)) << sizesText(generationSizes(h, job)) << "\n" << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1);
  {
    auto spec = h.jobs().spec(job);
    ASSERT_TRUE(spec.isOk());
    EXPECT_EQ(spec->workers.count, 4);
  }

  ASSERT_TRUE(h.waitPhase(job, "Succeeded", kJobSeconds)) << h.describeEvents(job);
  EXPECT_EQ(generationSizes(h, job), (std::vector<int>{4, 3, 4, 3, 4})) << h.describeEvents(job);
  EXPECT_EQ(h.record(job).restarts, 1);
}

}  // namespace
}  // namespace ddp
