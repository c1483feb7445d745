// Split brain (issue: a second process with rank 1's worker id and job token was accepted, ended
// the generation and held rank 1 beside the first). Real processes: a 2-worker job trains on the
// local launcher; this test starts a second ddp-worker with rank 1's id and token. It must be
// refused and exit at once, and the job go on untouched: same generation, same rank-1 process, no
// restart, Succeeded (Note [Worker incarnations] in controller/jobs/membership/worker_claim.cc).
// Faked: nothing. Cleanup: the intruder is this test's child (FaultHarness kills and reaps it);
// the job's workers are killed by PID from the launcher's pid files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;

TEST(DuplicateWorkerFaultTest, ASecondProcessWithALiveWorkersIdIsRefusedAndTheJobGoesOn) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("dup", h.dir() + "/ckpt", 8000, 3)).isOk());
  ASSERT_TRUE(h.waitTraining("dup", 50, 60)) << h.describeEvents("dup");
  const int64_t generation = h.record("dup").generation;
  const int64_t pid1 = h.pidOfRank("dup", 1);
  ASSERT_GT(pid1, 0);

  const pid_t intruder = h.startWorker("dup", "dup-w1", {.logName = "intruder"});
  ASSERT_GT(intruder, 0);
  const int status = h.waitWorker(intruder, 30);
  EXPECT_NE(status, -1) << "the intruder did not exit";
  EXPECT_NE(status, 0);
  std::ifstream in(h.dir() + "/intruder.log");
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("held by pid " + std::to_string(pid1)), std::string::npos) << log.str();
  EXPECT_NE(h.event("dup", "DuplicateWorkerRefused"), nullptr) << h.describeEvents("dup");

  auto r = h.record("dup");
  EXPECT_EQ(r.generation, generation) << "the generation did not end";
  EXPECT_EQ(h.pidOfRank("dup", 1), pid1) << "the first process keeps rank 1";
  ASSERT_TRUE(h.waitPhase("dup", "Succeeded", 120)) << h.describeEvents("dup");
  EXPECT_EQ(h.record("dup").restarts, 0) << h.describeEvents("dup");
  EXPECT_EQ(h.record("dup").generation, generation);
}

}  // namespace
}  // namespace ddp
