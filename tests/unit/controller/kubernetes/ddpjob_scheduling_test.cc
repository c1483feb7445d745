// What the DDPJob front end and the launcher do for the schedulers that place a job's pods, with
// the real JobManager and KubernetesLauncher against FakeKubeApiServer (FAKED: the API server,
// and Kueue's webhook and admission: enableKueueAdmission, admitKueueGroup): Kueue's plain pod
// group labels and its admission gate (Note [Kueue pod groups]), the gang schedulers' PodGroups
// (Note [Gang scheduler PodGroups]) and spec.managedBy (Note [Managed by]).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "controller/launch/kubernetes/scheduling_objects.h"
#include "tests/unit/controller/kubernetes/reconciler_fixture.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
using testing::KubernetesReconcilerTest;
using testing::kJobs;

json withLabels(json job, const json& labels) {
  job["metadata"]["labels"] = labels;
  return job;
}

// Note [Kueue pod groups]: the pods carry Kueue's labels and annotation; while Kueue's gate holds
// them the schedule timeout does not run, and it starts when the gate is gone.
TEST_F(KubernetesReconcilerTest, KueueGatedPodsWaitForAdmissionNotForTheTimeout) {
  api_.enableKueueAdmission(true);
  api_.put(kJobs, "ml", withLabels(ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"schedulingPolicy":{"scheduleTimeoutSeconds":1}}})"),
                                   {{kKueueQueueLabel, "research"}}));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  for (const json& pod : api_.objects("pods", "ml")) {
    const json& m = pod["metadata"];
    EXPECT_EQ(m["labels"][kKueueQueueLabel], "research") << pod;
    EXPECT_EQ(m["labels"][kKueuePodGroupLabel], "fm") << pod;
    EXPECT_EQ(m["annotations"][kKueuePodGroupTotalCount], "2") << pod;
    EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], kKueueAdmissionGate) << pod;  // the fake's webhook
  }
  // Three timeouts long behind the gate: no ScheduleTimeout, the job still Pending.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(kubeEvents("ScheduleTimeout").empty());
  ASSERT_TRUE(jobs_->get("fm").isOk());
  EXPECT_EQ(jobs_->get("fm")->phase, JobPhase::kPending);
  // Admitted, the pods are the scheduler's; still not placed, they time out a timeout later.
  const auto admitted = std::chrono::steady_clock::now();
  ASSERT_EQ(api_.admitKueueGroup("ml", "fm"), 2);
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("ScheduleTimeout").empty(); }, 50));
  EXPECT_GE(std::chrono::steady_clock::now() - admitted, std::chrono::milliseconds(900));
  const std::string message = kubeEvents("ScheduleTimeout")[0]["message"];
  EXPECT_NE(message.find("fm-worker-0"), std::string::npos) << message;
  EXPECT_NE(message.find("fm-worker-1"), std::string::npos) << message;
  EXPECT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Failed"; }));
}

// Without Kueue's label the pods carry none of its metadata.
TEST_F(KubernetesReconcilerTest, PodsCarryNoKueueMetadataWithoutTheQueueLabel) {
  api_.enableKueueAdmission(true);
  api_.put(kJobs, "ml", withLabels(ddpJob("fm"), {{"team", "vision"}}));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  for (const json& pod : api_.objects("pods", "ml")) {
    EXPECT_FALSE(pod["metadata"]["labels"].contains(kKueuePodGroupLabel)) << pod;
    EXPECT_FALSE(pod["metadata"].contains("annotations")) << pod;
    EXPECT_FALSE(pod["spec"].contains("schedulingGates")) << pod;
  }
}

// Note [Managed by]: a DDPJob another manager owns gets nothing from this controller; one that
// names this controller runs.
TEST_F(KubernetesReconcilerTest, ADdpJobManagedByAnotherControllerIsLeftAlone) {
  json other = ddpJob("elsewhere", R"(,"managedBy":"kueue.x-k8s.io/multikueue")");
  api_.put(kJobs, "ml", other);
  json ours = ddpJob("here", std::string(R"(,"managedBy":")") + kDdpControllerManager + "\"");
  api_.put(kJobs, "ml", ours);
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  ASSERT_TRUE(waitUntil([&] { return statusOf("here").contains("phase"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // ten reconciler ticks
  EXPECT_EQ(jobs_->get("elsewhere").status().code(), StatusCode::kNotFound);
  for (const json& pod : api_.objects("pods", "ml")) EXPECT_EQ(pod["metadata"]["labels"]["ddp.dev/job"], "here");
  EXPECT_TRUE(statusOf("elsewhere").empty()) << statusOf("elsewhere");
  for (const json& e : api_.objects("events", "ml")) {
    EXPECT_NE(e["involvedObject"].value("name", ""), "elsewhere") << e;
  }
}

// Note [Managed by]: spec.managedBy changed on an existing DDPJob (where the CRD's rule did not
// refuse it) is refused, not acted on: a DDPJob handed from MultiKueue to this controller is not
// started, one this controller runs is not given up; each change gets a Warning Event naming the
// field and both values.
TEST_F(KubernetesReconcilerTest, AChangedManagedByIsRefusedNotActedOn) {
  auto changeManager = [&](const std::string& name, const json& by) {
    json o = *api_.object(kJobs, "ml", name);
    if (by.is_null()) o["spec"].erase("managedBy");
    else o["spec"]["managedBy"] = by;
    o["metadata"]["generation"] = o["metadata"].value("generation", 1) + 1;  // a spec change
    api_.put(kJobs, "ml", o);
  };
  auto changeEvents = [&](const std::string& name) {
    std::vector<json> out;
    for (const json& e : kubeEvents("ManagedByChanged")) {
      if (e["involvedObject"].value("name", "") == name) out.push_back(e);
    }
    return out;
  };
  api_.put(kJobs, "ml", ddpJob("handed", R"(,"managedBy":"kueue.x-k8s.io/multikueue")"));
  api_.put(kJobs, "ml", ddpJob("ours"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  changeManager("handed", nullptr);
  changeManager("ours", "kueue.x-k8s.io/multikueue");
  ASSERT_TRUE(waitUntil([&] { return changeEvents("handed").size() == 1 && changeEvents("ours").size() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // ten reconciler ticks
  // Handed over: still not this controller's job.
  EXPECT_EQ(jobs_->get("handed").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(statusOf("handed").empty()) << statusOf("handed");
  const std::string handed = changeEvents("handed")[0]["message"];
  EXPECT_NE(handed.find("spec.managedBy: cannot change once the DDPJob exists (was 'kueue.x-k8s.io/multikueue', now unset)"),
            std::string::npos) << handed;
  EXPECT_EQ(changeEvents("handed")[0]["type"], "Warning");
  // Ours: still running, its pods kept and its status still written.
  ASSERT_TRUE(jobs_->get("ours").isOk());
  EXPECT_FALSE(isTerminal(jobs_->get("ours")->phase));
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  EXPECT_TRUE(statusOf("ours").contains("phase"));
  const std::string ours = changeEvents("ours")[0]["message"];
  EXPECT_NE(ours.find("(was unset, now 'kueue.x-k8s.io/multikueue')"), std::string::npos) << ours;
  // Once per generation: the ticks since posted no second Event.
  EXPECT_EQ(changeEvents("ours").size(), 1u);
}

class KubernetesGangSchedulerTest : public KubernetesReconcilerTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void adjustLauncher(KubernetesLauncherOptions& o) override { o.schedulerName = GetParam(); }
};

// Note [Gang scheduler PodGroups]: the job's PodGroup, owned by the DDPJob, with minMember from
// minAvailable or spec.workers.min, and pods marked for it; deleting the DDPJob takes it along.
TEST_P(KubernetesGangSchedulerTest, AJobGetsItsPodGroupAndItsPodsJoinIt) {
  const std::string scheduler = GetParam();
  const bool volcano = scheduler == kVolcanoSchedulerName;
  const std::string resource = volcano ? "scheduling.volcano.sh/v1beta1/podgroups" : "scheduling.x-k8s.io/v1alpha1/podgroups";
  const json created = api_.put(
      kJobs, "ml",
      ddpJob("fm", R"(,"workers":{"count":3,"min":2,"max":4},"kubernetes":{"runPolicy":{"schedulingPolicy":)"
                   R"({"scheduleTimeoutSeconds":120,"queue":"research","priorityClass":"high"}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 3; }));
  auto group = api_.object(resource, "ml", "fm");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ((*group)["kind"], "PodGroup");
  EXPECT_EQ((*group)["spec"]["minMember"], 2);  // spec.workers.min
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], created["metadata"]["uid"]);
  if (volcano) {
    EXPECT_EQ((*group)["spec"]["queue"], "research");
    EXPECT_EQ((*group)["spec"]["priorityClassName"], "high");
  } else {
    EXPECT_EQ((*group)["spec"]["scheduleTimeoutSeconds"], 120);
    EXPECT_FALSE((*group)["spec"].contains("queue"));
  }
  for (const json& pod : api_.objects("pods", "ml")) {
    EXPECT_EQ(pod["spec"]["schedulerName"], scheduler) << pod;
    if (volcano) {
      EXPECT_EQ(pod["metadata"]["annotations"][kVolcanoGroupAnnotation], "fm") << pod;
    } else {
      EXPECT_EQ(pod["metadata"]["labels"][kCoschedulingPodGroupLabel], "fm") << pod;
    }
  }
  ASSERT_TRUE(client_->remove("/apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm").isOk());
  EXPECT_TRUE(waitUntil([&] { return !api_.object(resource, "ml", "fm").has_value(); }));
}

TEST_P(KubernetesGangSchedulerTest, MinAvailableSetsMinMember) {
  const std::string resource = std::string(GetParam()) == kVolcanoSchedulerName ? "scheduling.volcano.sh/v1beta1/podgroups"
                                                                                : "scheduling.x-k8s.io/v1alpha1/podgroups";
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"workers":{"count":3},"kubernetes":{"runPolicy":{"schedulingPolicy":{"minAvailable":3}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.object(resource, "ml", "fm").has_value(); }));
  EXPECT_EQ((*api_.object(resource, "ml", "fm"))["spec"]["minMember"], 3);
}

INSTANTIATE_TEST_SUITE_P(Schedulers, KubernetesGangSchedulerTest,
                         ::testing::Values(kCoschedulingSchedulerName, kVolcanoSchedulerName));

// The default scheduler (or another) gets no PodGroup and no schedulerName.
TEST_F(KubernetesReconcilerTest, TheDefaultSchedulerGetsNoPodGroup) {
  api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  EXPECT_TRUE(api_.objects("scheduling.x-k8s.io/v1alpha1/podgroups", "ml").empty());
  EXPECT_TRUE(api_.objects("scheduling.volcano.sh/v1beta1/podgroups", "ml").empty());
  for (const json& pod : api_.objects("pods", "ml")) EXPECT_FALSE(pod["spec"].contains("schedulerName")) << pod;
}

// Note [Suspended jobs]: a DDPJob created with spec.suspend gets no pod and status Suspended;
// spec.suspend false starts its pods; true again stops them and the job is Suspended again.
TEST_F(KubernetesReconcilerTest, SpecSuspendHoldsStartsAndStopsTheJobsPods) {
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"suspend":true)"));
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Suspended"; })) << statusOf("fm");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  bool suspendedCondition = false;
  const json status = statusOf("fm");
  for (const json& c : status["conditions"]) {
    suspendedCondition = suspendedCondition || (c["type"] == "Suspended" && c["status"] == "True");
  }
  EXPECT_TRUE(suspendedCondition) << status.dump();
  const auto setSuspend = [&](bool on) {
    json o = *api_.object(kJobs, "ml", "fm");
    o["spec"]["suspend"] = on;
    api_.put(kJobs, "ml", o);
  };
  setSuspend(false);
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Pending"; })) << statusOf("fm");
  setSuspend(true);
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Suspended"; }, 100)) << statusOf("fm");
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").empty(); }, 100));
  EXPECT_TRUE(jobs_->spec("fm")->suspend);
  setSuspend(false);
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }, 100));
}

}  // namespace
}  // namespace ddp::controller::kube
