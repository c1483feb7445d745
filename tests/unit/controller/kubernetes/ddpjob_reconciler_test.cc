// DdpJobReconciler with the controller's real JobManager (SQLite job table in a temp dir) and
// the KubernetesLauncher, against FakeKubeApiServer (FAKED: the API server; no kubelet runs, so
// the worker pods are created but never start). A DDPJob becomes a job with pods owned by it and
// a status; a refused DDPJob gets phase Failed naming the field; deleting the DDPJob removes the
// job and its objects; ttlSecondsAfterFinished deletes a finished DDPJob; status writes follow
// Note [Status writes].
#include "controller/kubernetes/ddpjob_reconciler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "controller/api/job_json.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/store/job_status_json.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"
#include "tests/unit/controller/kubernetes/reconciler_fixture.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
using testing::KubernetesReconcilerTest;
using testing::kJobs;

TEST(KubernetesStatusTest, WritesFollowTheRateRules) {
  JobRecord r;
  r.name = "j";
  r.phase = JobPhase::kRunning;
  r.generation = 2;
  r.restarts = 1;
  r.workers = {{0, "j-w0", "", "", 0, 0, "Running", 0, 0}, {1, "j-w1", "", "", 0, 0, "Waiting", 0, 0}};
  r.progress.step = 10;
  json s = ddpJobStatus(r, 3);
  EXPECT_EQ(s["phase"], "Running");
  EXPECT_EQ(s["readyWorkers"], 1);
  EXPECT_EQ(s["selector"], "app.kubernetes.io/name=ddp-worker,ddp.dev/job=j");  // scale's labelSelectorPath
  EXPECT_EQ(s["worldSize"], 2);
  EXPECT_EQ(s["rendezvousGeneration"], 2);
  EXPECT_FALSE(s.contains("generation"));
  EXPECT_EQ(s["restarts"], 1);
  EXPECT_EQ(s["progress"]["step"], 10);
  EXPECT_EQ(s["observedGeneration"], 3);
  const TimePoint t0{};
  EXPECT_TRUE(statusWriteDue(json(), t0, s, t0));   // nothing written yet
  EXPECT_FALSE(statusWriteDue(s, t0, s, t0 + std::chrono::hours(1)));  // unchanged: never
  json progressed = s;
  progressed["progress"]["step"] = 11;
  EXPECT_FALSE(statusWriteDue(s, t0, progressed, t0 + std::chrono::seconds(9)));
  EXPECT_TRUE(statusWriteDue(s, t0, progressed, t0 + kStatusInterval));
  json restarted = s;
  restarted["restarts"] = 2;
  EXPECT_TRUE(statusWriteDue(s, t0, restarted, t0 + std::chrono::seconds(1)));  // at once
  json phase = s;
  phase["phase"] = "Succeeded";
  EXPECT_TRUE(statusWriteDue(s, t0, phase, t0));
}

// The DDPJob status is read from the job's types; the REST API's job object (an independent
// writer of the same record) is the oracle for what the two show alike.
TEST(KubernetesStatusTest, ShowsWhatTheRestJobObjectShows) {
  JobRecord r;
  r.name = "lm";
  r.phase = JobPhase::kFailed;
  r.startMs = 1767225600123;
  r.completionMs = 1767225900456;
  r.conditions = {{kConditionRunning, false, "WorkerFailed", "rank 1 exited: \"oom\"", 1767225900000},
                  {kConditionFailed, true, "WorkerFailed", "rank 1 exited", 1767225900001}};
  r.progress.step = 120;
  r.progress.totalSteps = 400;
  r.progress.epoch = 1;
  r.progress.epochs = 2;
  r.progress.loss = std::nan("");
  r.progress.samplesPerSecond = 812.5;
  r.progress.testAccuracy = 0.75;
  r.progress.etaSeconds = 33;
  r.progress.valLoss = 2.0;
  r.progress.tokensPerSecond = 1e5;
  const json status = ddpJobStatus(r, 4);
  const json api = json::parse(jobJson(r))["status"];
  for (const char* k : {"phase", "conditions", "progress", "startTime", "completionTime"}) {
    EXPECT_EQ(status[k], api[k]) << k;
  }
  EXPECT_TRUE(status["progress"]["loss"].is_null());
  EXPECT_EQ(status["progress"]["perplexity"], std::exp(2.0));
  JobRecord pending;
  pending.name = "p";
  const json fresh = ddpJobStatus(pending, 1);
  EXPECT_FALSE(fresh.contains("startTime")) << "not started: no startTime key";
  EXPECT_FALSE(fresh.contains("completionTime"));
}

TEST_F(KubernetesReconcilerTest, ADdpJobBecomesAJobWithPodsAndAStatus) {
  const json created = api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  EXPECT_TRUE(jobs_->get("fm").isOk());
  const json pod = *api_.object("pods", "ml", "fm-worker-0");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], created["metadata"]["uid"]);
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").contains("phase"); }));
  const json s = statusOf("fm");
  EXPECT_EQ(s["phase"], "Pending");  // no kubelet: the workers never register
  EXPECT_EQ(s["observedGeneration"], 1);
  EXPECT_EQ(s["readyWorkers"], 0);
  EXPECT_TRUE(s.contains("rendezvousGeneration"));
  // Written through the status subresource, as a merge patch.
  const auto r = api_.requests();
  EXPECT_NE(std::find(r.begin(), r.end(), "PATCH /apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm/status"), r.end());
}

TEST_F(KubernetesReconcilerTest, ARefusedDdpJobFailsNamingTheField) {
  api_.put(kJobs, "ml", ddpJob("bad", R"(,"optimizer":{"type":"sgd","lr":-1})"));
  ASSERT_TRUE(waitUntil([&] { return statusOf("bad").value("phase", "") == "Failed"; }));
  const json s = statusOf("bad");
  EXPECT_EQ(s["conditions"][0]["type"], "Valid");
  EXPECT_EQ(s["conditions"][0]["status"], "False");
  EXPECT_NE(s["conditions"][0]["message"].get<std::string>().find("spec.optimizer.lr"), std::string::npos) << s;
  EXPECT_FALSE(jobs_->get("bad").isOk());
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
}

// Note [Job names]: a DDPJob whose name its Service (DNS-1035) or its pods (63 characters)
// could not carry fails at once, naming the rule, and nothing is created for it.
TEST_F(KubernetesReconcilerTest, ADdpJobNamedAgainstTheNameRulesFailsNamingTheRule) {
  const std::string longName(52, 'a');
  api_.put(kJobs, "ml", ddpJob("7up"));
  api_.put(kJobs, "ml", ddpJob(longName));
  for (const auto& [name, rule] : {std::pair{std::string("7up"), "DNS-1035"},
                                   std::pair{longName, "at most 51 characters"}}) {
    ASSERT_TRUE(waitUntil([&] { return statusOf(name).value("phase", "") == "Failed"; })) << name;
    const std::string message = statusOf(name)["conditions"][0].value("message", "");
    EXPECT_NE(message.find("metadata.name"), std::string::npos) << message;
    EXPECT_NE(message.find(rule), std::string::npos) << message;
    EXPECT_FALSE(jobs_->get(name).isOk());
  }
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  EXPECT_TRUE(api_.objects("services", "ml").empty());
}

// Note [Object ownership]: a DDPJob named like the release (`ddp`, the controller's own Service)
// fails naming that Service, and deleting it leaves the controller's Service in place.
TEST_F(KubernetesReconcilerTest, ADdpJobNamedLikeTheControllersServiceFailsAndLeavesItAlone) {
  const json controllerService = api_.put(
      "services", "ml", {{"apiVersion", "v1"}, {"kind", "Service"},
                         {"metadata", {{"name", "ddp"}, {"labels", {{"app.kubernetes.io/name", "ddp"},
                                                                   {"app.kubernetes.io/managed-by", "Helm"}}}}},
                         {"spec", {{"selector", {{"app.kubernetes.io/name", "ddp"}}}}}});
  api_.put(kJobs, "ml", ddpJob("ddp"));
  ASSERT_TRUE(waitUntil([&] { return statusOf("ddp").value("phase", "") == "Failed"; })) << statusOf("ddp");
  EXPECT_NE(statusOf("ddp").dump().find("services/ddp already exists and is not job ddp's"), std::string::npos)
      << statusOf("ddp");
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  ASSERT_TRUE(client_->remove("/apis/ddp.dev/v1/namespaces/ml/ddpjobs/ddp").isOk());
  ASSERT_TRUE(waitUntil([&] { return !jobs_->get("ddp").isOk(); }));
  ASSERT_TRUE(api_.object("services", "ml", "ddp").has_value());
  EXPECT_EQ((*api_.object("services", "ml", "ddp"))["metadata"]["uid"], controllerService["metadata"]["uid"]);
  EXPECT_FALSE(api_.object("secrets", "ml", "ddp-worker-token").has_value());  // the job's own
}

TEST_F(KubernetesReconcilerTest, DeletingTheDdpJobRemovesTheJobAndItsObjects) {
  api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  ASSERT_TRUE(client_->remove("/apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm").isOk());
  EXPECT_TRUE(waitUntil([&] { return !jobs_->get("fm").isOk(); }));
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").empty(); }));
  EXPECT_FALSE(api_.object("services", "ml", "fm").has_value());
  EXPECT_FALSE(api_.object("secrets", "ml", "fm-worker-token").has_value());
}

TEST_F(KubernetesReconcilerTest, AFinishedDdpJobIsDeletedAfterItsTtl) {
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"ttlSecondsAfterFinished":0}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  // The status is written once submit() returned, i.e. once the launcher finished creating the
  // pods: a cancel before that loses a pod's stop (TheCancelOfAJobStillLaunchingStopsEveryPod).
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").contains("phase"); }));
  ASSERT_TRUE(jobs_->cancel("fm").isOk());  // the pods are deleted; the job ends Cancelled
  EXPECT_TRUE(waitUntil([&] { return !api_.object(kJobs, "ml", "fm").has_value(); }, 100))
      << jobPhaseName(jobs_->get("fm")->phase) << " " << jobs_->get("fm")->completionMs << " " << statusOf("fm");
  EXPECT_TRUE(waitUntil([&] { return !jobs_->get("fm").isOk(); }, 100));
}

// A cancel that comes while the launcher is still creating the job's pods (the pods exist,
// JobManager::submit has not returned) must still stop every pod. FAKED: the API server answers
// the pod creates 300 ms late. (The cancel's stopJob knows only the pods created so far:
// JobManager::launch() stops the job again once every pod exists.)
TEST_F(KubernetesReconcilerTest, TheCancelOfAJobStillLaunchingStopsEveryPod) {
  api_.delayCreateReplies("pods", std::chrono::milliseconds(300));
  // A long heartbeat window: the kill of workers silent past it while stopping (Note [Stopping
  // an unresponsive worker]) would end the lost pod 50 s later and hide the loss.
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"timeouts":{"heartbeatSeconds":10,"heartbeatMisses":5,"hangSeconds":120,"collectiveSeconds":180})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  ASSERT_TRUE(jobs_->cancel("fm").isOk());
  EXPECT_TRUE(waitUntil([&] { return jobs_->get("fm").isOk() && jobs_->get("fm")->phase == JobPhase::kCancelled; }, 150))
      << jobPhaseName(jobs_->get("fm")->phase) << ", pods left: " << api_.objects("pods", "ml").size();
}

// Note [Mirrored events]: the job's own events appear on the DDPJob, each once, with the
// DDPJob as involvedObject.
TEST_F(KubernetesReconcilerTest, TheJobsEventsBecomeKubernetesEventsOnTheDdpJob) {
  const json created = api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("Created").empty(); })) << api_.objects("events", "ml").size();
  const json e = kubeEvents("Created")[0];
  EXPECT_EQ(e["involvedObject"]["kind"], "DDPJob");
  EXPECT_EQ(e["involvedObject"]["apiVersion"], "ddp.dev/v1");
  EXPECT_EQ(e["involvedObject"]["name"], "fm");
  EXPECT_EQ(e["involvedObject"]["namespace"], "ml");
  EXPECT_EQ(e["involvedObject"]["uid"], created["metadata"]["uid"]);
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["source"]["component"], "ddp-controller");
  EXPECT_EQ(e["reportingComponent"], "ddp-controller");
  EXPECT_EQ(e["reportingInstance"], "ddp-0");
  EXPECT_EQ(e["message"], "job created with 2 worker(s)");
  // Cancelled: the cancel's events follow, and nothing is posted twice.
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").contains("phase"); }));
  ASSERT_TRUE(jobs_->cancel("fm").isOk());
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("JobCancelled").empty(); }, 100));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(kubeEvents("Created").size(), 1u);
  EXPECT_EQ(kubeEvents("CancelRequested").size(), 1u);
  EXPECT_EQ(kubeEvents("JobCancelled").size(), 1u);
}

// A controller that restarts with its job table does not post the old events again.
TEST_F(KubernetesReconcilerTest, ARestartedReconcilerDoesNotRepostOldEvents) {
  api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("Created").empty(); }));
  restartReconciler();
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").contains("phase"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // several ticks of the new one
  EXPECT_EQ(kubeEvents("Created").size(), 1u);
  ASSERT_TRUE(jobs_->cancel("fm").isOk());  // new events are mirrored
  EXPECT_TRUE(waitUntil([&] { return kubeEvents("CancelRequested").size() == 1; }));
}

TEST_F(KubernetesReconcilerTest, ARefusedDdpJobGetsAWarningEvent) {
  api_.put(kJobs, "ml", ddpJob("bad", R"(,"optimizer":{"type":"sgd","lr":-1})"));
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("InvalidSpec").empty(); }));
  const json e = kubeEvents("InvalidSpec")[0];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_NE(e["message"].get<std::string>().find("spec.optimizer.lr"), std::string::npos) << e;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(kubeEvents("InvalidSpec").size(), 1u);
}

// Note [Run policy]: onScheduleTimeout Fail. The pods never run (the scheduler says why); after
// the timeout a Warning Event names them and the reason, and the job fails. JobCalls::fail is
// unset here (the reconciler's fallback): the job is cancelled and the DDPJob says Failed.
TEST_F(KubernetesReconcilerTest, AGangThatIsNotScheduledInTimeFailsTheJob) {
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"schedulingPolicy":{"scheduleTimeoutSeconds":1}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  setPodStatus("fm-worker-0", unschedulable());
  setPodStatus("fm-worker-1", unschedulable());
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("ScheduleTimeout").empty(); }, 50));
  const std::string message = kubeEvents("ScheduleTimeout")[0]["message"];
  EXPECT_EQ(kubeEvents("ScheduleTimeout")[0]["type"], "Warning");
  EXPECT_NE(message.find("fm-worker-0 Pending (Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.)"),
            std::string::npos) << message;
  EXPECT_NE(message.find("fm-worker-1"), std::string::npos) << message;
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Failed"; }));
  const json s = statusOf("fm");
  bool failed = false;
  for (const json& c : s["conditions"]) {
    failed = failed || (c["type"] == "Failed" && c["status"] == "True" && c["reason"] == "ScheduleTimeout");
  }
  EXPECT_TRUE(failed) << s;
  EXPECT_NE(s["message"].get<std::string>().find("fm-worker-0"), std::string::npos) << s;
  // The job ends and its pods go (cleanPodPolicy Running: they never ran).
  EXPECT_TRUE(waitUntil([&] { return jobs_->get("fm").isOk() && isTerminal(jobs_->get("fm")->phase); }, 150));
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").empty(); }, 100));
  EXPECT_EQ(statusOf("fm")["phase"], "Failed");
  EXPECT_EQ(kubeEvents("ScheduleTimeout").size(), 1u);
}

// With JobCalls::fail set (the controller's wiring: JobManager::fail), the schedule timeout
// fails the job itself: Failed with reason ScheduleTimeout, no cancel, and its pods go.
TEST_F(KubernetesReconcilerTest, AScheduleTimeoutFailsTheJobThroughJobCallsFail) {
  std::atomic<int> calls{0};
  calls_.fail = [&](const std::string& job, const std::string& reason, const std::string& message) {
    ++calls;
    return jobs_->fail(job, reason, message);
  };
  restartReconciler();
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"schedulingPolicy":{"scheduleTimeoutSeconds":1,"onScheduleTimeout":"Fail"}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  setPodStatus("fm-worker-0", unschedulable());
  ASSERT_TRUE(waitUntil([&] { return jobs_->get("fm").isOk() && isTerminal(jobs_->get("fm")->phase); }, 50));
  const JobRecord rec = *jobs_->get("fm");
  EXPECT_EQ(rec.phase, JobPhase::kFailed);
  const JobCondition* failed = rec.findCondition(kConditionFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "ScheduleTimeout");
  EXPECT_NE(failed->message.find("fm-worker-0 Pending (Unschedulable"), std::string::npos) << failed->message;
  EXPECT_EQ(rec.findCondition(kConditionCancelled), nullptr);
  EXPECT_EQ(calls.load(), 1);
  ASSERT_TRUE(waitUntil([&] { return statusOf("fm").value("phase", "") == "Failed"; }));
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").empty(); }, 100));
}

// onScheduleTimeout Retry: the pods not running are replaced (new pods, new uids), the others
// stay, and the timeout starts over for the new pods. JobCalls::replaceWorkers is the
// controller's wiring (JobManager::replaceWorkers): no failure, no restart counted.
TEST_F(KubernetesReconcilerTest, AGangThatIsNotScheduledInTimeIsRetried) {
  std::atomic<int> replaced{0};
  calls_.replaceWorkers = [&](const std::string& job, const std::vector<std::string>& ids) {
    DDP_RETURN_IF_ERROR(jobs_->replaceWorkers(job, ids));
    replaced += static_cast<int>(ids.size());
    return Status::ok();
  };
  restartReconciler();
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"schedulingPolicy":{"scheduleTimeoutSeconds":1,"onScheduleTimeout":"Retry"}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  setPodStatus("fm-worker-0", unschedulable());
  setPodStatus("fm-worker-1", {{"phase", "Running"}});
  const std::string uid0 = (*api_.object("pods", "ml", "fm-worker-0"))["metadata"]["uid"];
  const std::string uid1 = (*api_.object("pods", "ml", "fm-worker-1"))["metadata"]["uid"];
  ASSERT_TRUE(waitUntil([&] { return replaced.load() == 1; }, 50));
  ASSERT_TRUE(waitUntil([&] {
    auto p = api_.object("pods", "ml", "fm-worker-0");
    return p && (*p)["metadata"]["uid"] != uid0;
  }));
  EXPECT_EQ((*api_.object("pods", "ml", "fm-worker-1"))["metadata"]["uid"], uid1);  // the running one stays
  ASSERT_FALSE(kubeEvents("ScheduleTimeout").empty());
  EXPECT_NE(kubeEvents("ScheduleTimeout")[0]["message"].get<std::string>().find("Retry"), std::string::npos);
  EXPECT_NE(kubeEvents("ScheduleTimeout")[0]["message"].get<std::string>().find("fm-worker-0"), std::string::npos);
  EXPECT_EQ(kubeEvents("ScheduleTimeout")[0]["message"].get<std::string>().find("fm-worker-1"), std::string::npos);
  // The new pod gets a whole timeout of its own, then is replaced again.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(replaced.load(), 1);
  EXPECT_TRUE(waitUntil([&] { return replaced.load() == 2; }, 30));
  EXPECT_FALSE(isTerminal(jobs_->get("fm")->phase)) << jobPhaseName(jobs_->get("fm")->phase);
  EXPECT_EQ(jobs_->get("fm")->restarts, 0);
  // (The job's events reach the table at the job manager's next tick.)
  auto replacing = [&] {
    auto events = jobs_->events("fm");
    int n = 0;
    for (const auto& e : events.isOk() ? *events : std::vector<JobEvent>{}) n += e.reason == "ReplacingWorker";
    return n;
  };
  EXPECT_TRUE(waitUntil([&] { return replacing() == 2; })) << replacing();
}

// Pods that run in time: nothing happens.
TEST_F(KubernetesReconcilerTest, AGangScheduledInTimeIsLeftAlone) {
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"schedulingPolicy":{"scheduleTimeoutSeconds":1}}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  setPodStatus("fm-worker-0", {{"phase", "Running"}});
  setPodStatus("fm-worker-1", {{"phase", "Running"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));
  EXPECT_TRUE(kubeEvents("ScheduleTimeout").empty());
  EXPECT_FALSE(isTerminal(jobs_->get("fm")->phase));
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
}

// Note [Run policy]: activeDeadlineSeconds counts from the job's acceptance, so a job whose pods
// never run expires too.
TEST_F(KubernetesReconcilerTest, APendingJobPastItsActiveDeadlineIsCancelled) {
  api_.put(kJobs, "ml", ddpJob("fm", R"(,"kubernetes":{"runPolicy":{"activeDeadlineSeconds":1}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  ASSERT_TRUE(waitUntil([&] { return !kubeEvents("DeadlineExceeded").empty(); }, 50));
  const json e = kubeEvents("DeadlineExceeded")[0];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_NE(e["message"].get<std::string>().find("activeDeadlineSeconds (1 s since it was accepted, Pending)"),
            std::string::npos) << e;
  EXPECT_EQ(jobs_->get("fm")->startMs, 0);  // it never ran
  EXPECT_TRUE(waitUntil([&] { return jobs_->get("fm")->phase == JobPhase::kCancelled; }, 150))
      << jobPhaseName(jobs_->get("fm")->phase);
  EXPECT_EQ(kubeEvents("DeadlineExceeded").size(), 1u);
}

// Note [Finished before]: a new leader with an empty job table leaves a finished DDPJob alone.
TEST_F(KubernetesReconcilerTest, AFinishedDdpJobIsNotSubmittedAgainByANewLeader) {
  for (const char* phase : {"Succeeded", "Failed", "Cancelled"}) {
    const std::string name = std::string("done-") + (phase[0] == 'S' ? "s" : phase[0] == 'F' ? "f" : "c");
    json job = ddpJob(name);
    job["status"] = {{"phase", phase}, {"observedGeneration", 1}, {"completionTime", "2026-01-01T00:00:00Z"}};
    api_.put(kJobs, "ml", job);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  for (const char* name : {"done-s", "done-f", "done-c"}) {
    EXPECT_FALSE(jobs_->get(name).isOk()) << name;
    EXPECT_EQ(statusOf(name)["completionTime"], "2026-01-01T00:00:00Z") << name;  // not rewritten
  }
}

TEST_F(KubernetesReconcilerTest, AFinishedDdpJobLeftAloneStillHasItsTtl) {
  json job = ddpJob("done", R"(,"kubernetes":{"runPolicy":{"ttlSecondsAfterFinished":60}})");
  job["status"] = {{"phase", "Succeeded"}, {"observedGeneration", 1}, {"completionTime", rfc3339(unixMillisNow() - 61'000)}};
  api_.put(kJobs, "ml", job);
  json fresh = ddpJob("fresh", R"(,"kubernetes":{"runPolicy":{"ttlSecondsAfterFinished":60}})");
  fresh["status"] = {{"phase", "Failed"}, {"observedGeneration", 1}, {"completionTime", rfc3339(unixMillisNow())}};
  api_.put(kJobs, "ml", fresh);
  EXPECT_TRUE(waitUntil([&] { return !api_.object(kJobs, "ml", "done").has_value(); }));
  EXPECT_TRUE(api_.object(kJobs, "ml", "fresh").has_value());
  EXPECT_FALSE(jobs_->get("done").isOk());
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
}

// A refusal of an older spec is not "finished": the edited DDPJob is submitted.
TEST_F(KubernetesReconcilerTest, AnEditedRefusedDdpJobIsLookedAtAgain) {
  json job = ddpJob("fm");
  job["metadata"]["generation"] = 2;
  job["status"] = invalidJobStatus("spec.optimizer.lr: must be > 0", 1, unixMillisNow());
  api_.put(kJobs, "ml", job);
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
}

// cleanPodPolicy None: the pods of a finished job stay (for their logs); All: they go.
TEST_F(KubernetesReconcilerTest, CleanPodPolicyNoneKeepsTheFinishedJobsPods) {
  api_.put(kJobs, "ml", ddpJob("keep", R"(,"kubernetes":{"runPolicy":{"cleanPodPolicy":"None"}})"));
  api_.put(kJobs, "ml", ddpJob("drop", R"(,"kubernetes":{"runPolicy":{"cleanPodPolicy":"All"}})"));
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 4; }));
  ASSERT_TRUE(waitUntil([&] { return statusOf("keep").contains("phase") && statusOf("drop").contains("phase"); }));
  const json failed = {{"phase", "Failed"},
                       {"containerStatuses", json::array({{{"name", "worker"}, {"state", {{"terminated", {{"exitCode", 3}}}}}}})}};
  for (const char* pod : {"keep-worker-0", "keep-worker-1", "drop-worker-0", "drop-worker-1"}) setPodStatus(pod, failed);
  ASSERT_TRUE(waitUntil([&] { return statusOf("keep").value("phase", "") == "Failed"; }, 100)) << statusOf("keep");
  ASSERT_TRUE(waitUntil([&] { return statusOf("drop").value("phase", "") == "Failed"; }, 100)) << statusOf("drop");
  EXPECT_TRUE(waitUntil([&] { return !api_.object("pods", "ml", "drop-worker-0") && !api_.object("pods", "ml", "drop-worker-1"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(api_.object("pods", "ml", "keep-worker-0").has_value());
  EXPECT_TRUE(api_.object("pods", "ml", "keep-worker-1").has_value());
}

}  // namespace
// Note [Elastic membership]: `kubectl scale ddpj fm --replicas=3` is a merge patch of the scale
// subresource (the CRD maps spec.replicas to .spec.workers.count); the reconciler applies the
// changed count as a scale of the job, and a count outside [min, max] is refused.
TEST_F(KubernetesReconcilerTest, TheScaleSubresourceScalesTheJob) {
  json job = ddpJob("fm");
  job["spec"]["workers"] = {{"count", 2}, {"min", 1}, {"max", 4}};
  api_.put(kJobs, "ml", job);
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  auto count = [&] {
    auto s = jobs_->spec("fm");
    return s.isOk() ? s->workers.count : -1;
  };
  const std::string scale = "/apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm/scale";
  ASSERT_TRUE(client_->mergePatch(scale, {{"spec", {{"replicas", 3}}}}).isOk());
  EXPECT_EQ((*api_.object(kJobs, "ml", "fm"))["spec"]["workers"]["count"], 3);
  ASSERT_TRUE(waitUntil([&] { return count() == 3; })) << count();
  EXPECT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 3; })) << "the new slot's pod";
  auto got = client_->get(scale);
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ((*got)["spec"]["replicas"], 3);
  // Above spec.workers.max: refused, the job keeps its count.
  ASSERT_TRUE(client_->mergePatch(scale, {{"spec", {{"replicas", 9}}}}).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(count(), 3);
  // Down to 1: the highest slots retire.
  ASSERT_TRUE(client_->mergePatch(scale, {{"spec", {{"replicas", 1}}}}).isOk());
  EXPECT_TRUE(waitUntil([&] { return count() == 1; })) << count();
  // The controller's ticker writes events: wait (bounded) for this one.
  const bool scaled = waitUntil([&] {
    auto events = jobs_->events("fm");
    if (!events.isOk()) return false;
    for (const auto& e : *events) {
      if (e.reason == "Scaled" && e.message == "scaled to 1 worker(s) (from 3)") return true;
    }
    return false;
  });
  EXPECT_TRUE(scaled);
}

}  // namespace ddp::controller::kube
