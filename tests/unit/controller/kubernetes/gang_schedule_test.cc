// Note [Schedule timeout]: decideGang and podScheduleOf, pure.
#include "controller/kubernetes/gang_schedule.h"

#include <gtest/gtest.h>

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

PodSchedule pod(const std::string& name, const std::string& phase, int64_t sinceMs, const std::string& reason = "",
                const std::string& message = "") {
  PodSchedule p;
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = phase;
  p.sinceMs = sinceMs;
  p.reason = reason;
  p.message = message;
  return p;
}

constexpr int64_t kT0 = 1'000'000;

TEST(KubernetesGangScheduleTest, EveryPodRunningIsOk) {
  const GangVerdict v = decideGang({pod("j-worker-0", "Running", kT0), pod("j-worker-1", "Running", kT0)},
                                   kT0 + 3'600'000, 1000);
  EXPECT_EQ(v.state, GangState::kOk);
  EXPECT_TRUE(v.notRunning.empty());
}

TEST(KubernetesGangScheduleTest, EndedPodsWereScheduled) {
  const GangVerdict v = decideGang({pod("a", "Succeeded", kT0), pod("b", "Failed", kT0), pod("c", "Running", kT0)},
                                   kT0 + 10'000, 1000);
  EXPECT_EQ(v.state, GangState::kOk);
}

TEST(KubernetesGangScheduleTest, NoPodsIsWaiting) {
  EXPECT_EQ(decideGang({}, kT0, 1000).state, GangState::kWaiting);
  PodSchedule gone = pod("a", "Pending", 0);
  gone.terminating = true;
  EXPECT_EQ(decideGang({gone}, kT0, 1000).state, GangState::kWaiting);  // being deleted: not looked at
}

TEST(KubernetesGangScheduleTest, PendingWithinTheTimeoutIsWaiting) {
  const GangVerdict v = decideGang({pod("a", "Running", kT0), pod("b", "Pending", kT0), pod("c", "", kT0)},
                                   kT0 + 999, 1000);
  EXPECT_EQ(v.state, GangState::kWaiting);
  ASSERT_EQ(v.notRunning.size(), 2u);
  EXPECT_TRUE(v.message.empty());
}

TEST(KubernetesGangScheduleTest, PendingAtTheTimeoutTimesOutNamingEachPodAndWhy) {
  const GangVerdict v = decideGang({pod("j-worker-2", "Pending", kT0, "Unschedulable",
                                        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."),
                                    pod("j-worker-0", "Running", kT0), pod("j-worker-1", "", kT0 + 500)},
                                   kT0 + 300'000, 300'000);
  EXPECT_EQ(v.state, GangState::kTimedOut);
  ASSERT_EQ(v.notRunning.size(), 2u);
  EXPECT_EQ(v.notRunning[0].name, "j-worker-1");  // sorted by name
  EXPECT_EQ(v.message,
            "2 worker pod(s) not running after 300s (scheduleTimeoutSeconds 300): j-worker-1 Pending; "
            "j-worker-2 Pending (Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.)");
}

// A replaced pod (seen later) has a wait of its own: the older one times out first.
TEST(KubernetesGangScheduleTest, EachPodWaitsFromWhenItWasSeen) {
  EXPECT_EQ(decideGang({pod("new", "Pending", kT0 + 5000)}, kT0 + 5999, 1000).state, GangState::kWaiting);
  EXPECT_EQ(decideGang({pod("new", "Pending", kT0 + 5000)}, kT0 + 6000, 1000).state, GangState::kTimedOut);
  EXPECT_EQ(decideGang({pod("new", "Pending", kT0 + 5000), pod("old", "Pending", kT0)}, kT0 + 1000, 1000).state,
            GangState::kTimedOut);
}

TEST(KubernetesGangScheduleTest, ReasonOnlyOrMessageOnly) {
  EXPECT_NE(decideGang({pod("a", "Pending", 0, "Unschedulable")}, 5000, 1000).message.find("a Pending (Unschedulable)"),
            std::string::npos);
  EXPECT_NE(decideGang({pod("a", "Pending", 0, "", "no nodes")}, 5000, 1000).message.find("a Pending (no nodes)"),
            std::string::npos);
}

TEST(KubernetesGangScheduleTest, PodFieldsFromTheObject) {
  const json unscheduled = json::parse(R"({"metadata":{"name":"j-worker-0","uid":"u1"},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
      "message":"0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}."}]}})");
  PodSchedule p = podScheduleOf(unscheduled);
  EXPECT_EQ(p.name, "j-worker-0");
  EXPECT_EQ(p.uid, "u1");
  EXPECT_EQ(p.phase, "Pending");
  EXPECT_FALSE(p.terminating);
  EXPECT_EQ(p.reason, "Unschedulable");
  EXPECT_EQ(p.message, "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}.");
  EXPECT_EQ(p.sinceMs, 0);

  EXPECT_EQ(p.slot, -1);  // no ddp.dev/slot label

  const json pulling = json::parse(R"({"metadata":{"name":"j-worker-1","uid":"u2","deletionTimestamp":"2026-01-01T00:00:00Z",
    "labels":{"ddp.dev/slot":"1"}},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True"}],
      "containerStatuses":[{"name":"worker","state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image"}}}]}})");
  p = podScheduleOf(pulling);
  EXPECT_TRUE(p.terminating);
  EXPECT_EQ(p.slot, 1);
  EXPECT_EQ(p.reason, "ImagePullBackOff");
  EXPECT_EQ(p.message, "Back-off pulling image");

  p = podScheduleOf(json::parse(R"({"metadata":{"name":"fresh"}})"));  // no status yet
  EXPECT_EQ(p.phase, "");
  EXPECT_EQ(p.reason, "");
}

// Note [Schedule timeout]: a pod a scheduling gate holds (Kueue's admission) is waiting, never
// timed out, and listed apart from the pods the scheduler has.
TEST(KubernetesGangScheduleTest, GatedPodsWaitWithoutTimingOut) {
  PodSchedule gated = pod("j-worker-1", "Pending", kT0, "SchedulingGated", "");
  gated.gated = true;
  GangVerdict v = decideGang({pod("j-worker-0", "Running", kT0), gated}, kT0 + 3'600'000, 1000);
  EXPECT_EQ(v.state, GangState::kWaiting);
  EXPECT_TRUE(v.notRunning.empty());
  ASSERT_EQ(v.gated.size(), 1u);
  EXPECT_EQ(v.gated[0].name, "j-worker-1");
  // Every pod gated: waiting, however long.
  PodSchedule other = gated;
  other.name = "j-worker-0";
  EXPECT_EQ(decideGang({other, gated}, kT0 + 3'600'000, 1000).state, GangState::kWaiting);
  // A pod the scheduler has, past the timeout, still times out; the gated one is not named.
  v = decideGang({pod("j-worker-0", "Pending", kT0, "Unschedulable", "no nodes"), gated}, kT0 + 1000, 1000);
  EXPECT_EQ(v.state, GangState::kTimedOut);
  ASSERT_EQ(v.notRunning.size(), 1u);
  EXPECT_EQ(v.notRunning[0].name, "j-worker-0");
  EXPECT_EQ(v.message.find("j-worker-1"), std::string::npos) << v.message;
}

TEST(KubernetesGangScheduleTest, SchedulingGatesAreReadFromThePod) {
  const json pending = {{"metadata", {{"name", "j-worker-0"}, {"uid", "u0"}}},
                        {"spec", {{"schedulingGates", json::array({{{"name", "kueue.x-k8s.io/admission"}}})}}},
                        {"status", {{"phase", "Pending"},
                                    {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "False"},
                                                                 {"reason", "SchedulingGated"}}})}}}};
  PodSchedule p = podScheduleOf(pending);
  EXPECT_TRUE(p.gated);
  EXPECT_EQ(p.reason, "SchedulingGated");
  json ungated = pending;
  ungated["spec"]["schedulingGates"] = json::array();
  EXPECT_FALSE(podScheduleOf(ungated).gated);
  ungated["spec"].erase("schedulingGates");
  EXPECT_FALSE(podScheduleOf(ungated).gated);
}

}  // namespace
}  // namespace ddp::controller::kube
