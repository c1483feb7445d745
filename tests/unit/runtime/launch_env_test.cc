// The launchers' comm-priority rule (Note [Comm thread priority]): normal priority exactly when
// compute threads outnumber the cores and neither the job nor the environment chose.
#include "worker/runtime/launch_env.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

namespace ddp::runtime {
namespace {

class LaunchEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("DDP_COMM_THREAD_PRIORITY"); }
  void TearDown() override { unsetenv("DDP_COMM_THREAD_PRIORITY"); }
};

TEST_F(LaunchEnvTest, NormalOnlyWhenComputeThreadsOutnumberTheCores) {
  JobSpec spec;
  EXPECT_FALSE(commPriorityEnvFor(spec, 2, 2).has_value());
  EXPECT_FALSE(commPriorityEnvFor(spec, 1, 1).has_value());
  auto four = commPriorityEnvFor(spec, 4, 2);
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(*four, "DDP_COMM_THREAD_PRIORITY=normal");
  spec.threadsPerWorker = 2;
  EXPECT_TRUE(commPriorityEnvFor(spec, 2, 2).has_value());   // 4 compute threads on 2 cores
  EXPECT_FALSE(commPriorityEnvFor(spec, 2, 4).has_value());
}

TEST_F(LaunchEnvTest, TheJobOrTheEnvironmentWins) {
  JobSpec spec;
  spec.commThreadPriority = CommThreadPriority::kRealtime;
  EXPECT_FALSE(commPriorityEnvFor(spec, 8, 2).has_value());
  spec.commThreadPriority = CommThreadPriority::kAuto;
  setenv("DDP_COMM_THREAD_PRIORITY", "realtime", 1);
  EXPECT_FALSE(commPriorityEnvFor(spec, 8, 2).has_value());
}

TEST_F(LaunchEnvTest, UsableCoresIsTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(usableCores(), CPU_COUNT(&set));
}

}  // namespace
}  // namespace ddp::runtime
