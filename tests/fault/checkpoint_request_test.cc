// On-demand checkpoints (POST /v1/jobs/{name}/checkpoints, `ddpctl checkpoint NAME`) with real
// worker processes: the controller's `checkpoint` command reaches the ranks through their
// heartbeats, the ranks agree on the step with their per-step flag allreduce, and every rank
// writes its shard of that same step (the manifest commits it).
#include <gtest/gtest.h>

#include "common/checkpoint/checkpoint_store.h"
#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;

TEST(CheckpointRequestTest, ARequestedCheckpointIsWrittenAtAStepEveryRankAgreedOn) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string dir = h.dir() + "/ckpt";
  // everySteps 0: no periodic checkpoint; only the requested one (and the final one).
  std::string yaml = faultJobYaml("ondemand", dir, 200000, 3);
  yaml.replace(yaml.find("everySteps: 20"), 14, "everySteps: 0");
  ASSERT_TRUE(h.submit(yaml).isOk());
  ASSERT_TRUE(h.waitFor(60, [&] { return h.record("ondemand").progress.step > 50; })) << h.describeEvents("ondemand");
  auto asked = h.jobs().requestCheckpoint("ondemand");
  ASSERT_TRUE(asked.isOk()) << asked.status().toString();
  int64_t step = -1;
  ASSERT_TRUE(h.waitFor(20, [&] {
    runtime::CheckpointStore store(dir);
    auto latest = store.findLatestComplete();
    if (latest.isOk() && latest->manifest) step = latest->manifest->step;
    return step > 0;
  })) << h.describeEvents("ondemand");
  EXPECT_GE(step, *asked) << "written after the request";
  EXPECT_LT(step, 200000);
  runtime::CheckpointStore store(dir);
  auto manifest = store.verify(step);
  ASSERT_TRUE(manifest.isOk()) << manifest.status().toString();
  EXPECT_EQ(manifest->worldSize, 2) << "every rank wrote its shard of the same step";
  EXPECT_NE(h.event("ondemand", "CheckpointRequested"), nullptr);
  ASSERT_TRUE(h.jobs().cancel("ondemand").isOk());
  EXPECT_TRUE(h.waitPhase("ondemand", "Cancelled", 30)) << h.describeEvents("ondemand");
}

TEST(CheckpointRequestTest, AJobWithoutACheckpointDirectoryIsRefused) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  std::string yaml = faultJobYaml("nodir", "/unused", 200000, 3);
  const size_t at = yaml.find("  checkpoint:");
  yaml.erase(at, yaml.find("  timeouts:") - at);
  ASSERT_TRUE(h.submit(yaml).isOk());
  auto asked = h.jobs().requestCheckpoint("nodir");
  ASSERT_FALSE(asked.isOk());
  EXPECT_EQ(asked.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(asked.status().message().find("no checkpoint directory"), std::string::npos) << asked.status().message();
  EXPECT_FALSE(h.jobs().requestCheckpoint("no-such-job").isOk());
  ASSERT_TRUE(h.jobs().cancel("nodir").isOk());
}

// A checkpoint directory whose every checkpoint is unusable: the run starts over from step 0, and
// says so in the job's events (not only in a worker's log).
TEST(CheckpointRequestTest, StartingOverBecauseNoCheckpointIsUsableIsAnEvent) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string dir = h.dir() + "/ckpt";
  runtime::CheckpointStore store(dir);
  ASSERT_EQ(std::system(("mkdir -p " + store.stepDir(40) + " && echo garbage > " + store.manifestPath(40)).c_str()), 0);
  ASSERT_TRUE(h.submit(faultJobYaml("over", dir, 200, 3)).isOk());
  ASSERT_TRUE(h.waitPhase("over", "Succeeded", 60)) << h.describeEvents("over");
  auto warning = h.event("over", "WorkerWarning");
  ASSERT_NE(warning, nullptr) << h.describeEvents("over");
  EXPECT_NE(warning->message.find("worker rank 0: no usable checkpoint in " + dir), std::string::npos) << warning->message;
  EXPECT_NE(warning->message.find("starting from step 0"), std::string::npos) << warning->message;
}

}  // namespace
}  // namespace ddp
