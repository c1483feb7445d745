// The launchers' comm-priority rule (Note [Comm thread priority]): the operator's choice when
// there is one; else normal exactly when compute threads outnumber the cores and the job left
// it at auto. Pure: the operator's choice comes from an injected environment.
#include "worker/control/launch_env.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <map>
#include <string>

#include "common/usable_cores.h"

namespace ddp::runtime {
namespace {

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LaunchEnvTest, NormalOnlyWhenComputeThreadsOutnumberTheCores) {
  JobSpec spec;
  EXPECT_FALSE(workerCommPriority(spec, 2, 2, std::nullopt).has_value());
  EXPECT_FALSE(workerCommPriority(spec, 1, 1, std::nullopt).has_value());
  EXPECT_EQ(workerCommPriority(spec, 4, 2, std::nullopt), CommThreadPriority::kNormal);
  spec.threadsPerWorker = 2;
  EXPECT_EQ(workerCommPriority(spec, 2, 2, std::nullopt), CommThreadPriority::kNormal);  // 4 compute threads on 2 cores
  EXPECT_FALSE(workerCommPriority(spec, 2, 4, std::nullopt).has_value());
}

TEST(LaunchEnvTest, TheOperatorOrTheJobWins) {
  JobSpec spec;
  spec.commThreadPriority = CommThreadPriority::kRealtime;
  EXPECT_FALSE(workerCommPriority(spec, 8, 2, std::nullopt).has_value());  // the job's own setting rules
  spec.commThreadPriority = CommThreadPriority::kAuto;
  EXPECT_EQ(workerCommPriority(spec, 8, 2, CommThreadPriority::kRealtime), CommThreadPriority::kRealtime);
  EXPECT_EQ(workerCommPriority(spec, 1, 8, CommThreadPriority::kNormal), CommThreadPriority::kNormal);
}

TEST(LaunchEnvTest, TheOperatorsChoiceIsTheLaunchersEnvironment) {
  auto unset = operatorCommPriority(envOf({}));
  ASSERT_TRUE(unset.isOk()) << unset.status();
  EXPECT_FALSE(unset->has_value());
  auto empty = operatorCommPriority(envOf({{"DDP_COMM_THREAD_PRIORITY", ""}}));
  ASSERT_TRUE(empty.isOk()) << empty.status();
  EXPECT_FALSE(empty->has_value());
  auto normal = operatorCommPriority(envOf({{"DDP_COMM_THREAD_PRIORITY", "normal"}}));
  ASSERT_TRUE(normal.isOk()) << normal.status();
  EXPECT_EQ(*normal, CommThreadPriority::kNormal);
  auto bad = operatorCommPriority(envOf({{"DDP_COMM_THREAD_PRIORITY", "urgent"}}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("DDP_COMM_THREAD_PRIORITY"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("'urgent'"), std::string::npos) << bad.status();
}

TEST(LaunchEnvTest, UsableCoresIsTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(usableCores(), CPU_COUNT(&set));
}

}  // namespace
}  // namespace ddp::runtime
