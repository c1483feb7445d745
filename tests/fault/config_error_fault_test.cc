// Errors no restart can fix fail the job at once (issue: a checkpoint directory locked by another
// job used all three restarts first). Real processes: job A trains and holds its checkpoint
// directory; job B names the same directory: its workers exit with the bad-configuration status
// (PermissionDenied is among the errors no restart can fix, worker_entry.cc isConfigError) and
// B fails at once, with 0 restarts and the reason in its condition; A goes on.
// Faked: nothing. Cleanup: FaultHarness stops the controller and kills the workers by PID.
#include <gtest/gtest.h>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;

TEST(ConfigErrorFaultTest, AnotherJobsCheckpointDirectoryFailsTheJobAtOnceWithTheReason) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string dir = h.dir() + "/shared-ckpt";
  ASSERT_TRUE(h.submit(faultJobYaml("owner", dir, 200000, 3)).isOk());
  ASSERT_TRUE(h.waitTraining("owner", 20, 60)) << h.describeEvents("owner");

  ASSERT_TRUE(h.submit(faultJobYaml("intruder", dir, 1000, 3)).isOk());
  ASSERT_TRUE(h.waitFor(60, [&] { return controller::isTerminal(h.record("intruder").phase); }))
      << h.describeEvents("intruder");
  const controller::JobRecord r = h.record("intruder");
  EXPECT_EQ(std::string(controller::jobPhaseName(r.phase)), "Failed") << h.describeEvents("intruder");
  EXPECT_EQ(r.restarts, 0) << "no restart is spent on it\n" << h.describeEvents("intruder");
  std::string why;
  for (const auto& c : r.conditions) why += c.type + ": " + c.message + "\n";
  EXPECT_NE(why.find("is in use by job 'owner'"), std::string::npos) << why << h.describeEvents("intruder");
  EXPECT_EQ(std::string(controller::jobPhaseName(h.record("owner").phase)), "Running") << h.describeEvents("owner");
  EXPECT_EQ(h.record("owner").restarts, 0);
  ASSERT_TRUE(h.jobs().cancel("owner").isOk());
  ASSERT_TRUE(h.waitPhase("owner", "Cancelled", 60)) << h.describeEvents("owner");
}

}  // namespace
}  // namespace ddp
