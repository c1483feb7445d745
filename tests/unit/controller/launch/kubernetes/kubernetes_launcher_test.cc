// KubernetesLauncher against FakeKubeApiServer. FAKED: the API server (real paths, codes and
// watch streams) and the kubelet: the test itself moves pods to Running / Failed by writing
// their status, as a kubelet would. Checks: objects created once per slot, exits reported once
// with the container's exit code, replacement of one worker's pod (held and released), merged
// logs through the pod log API (and followed), stop and cleanup, readiness, and the objects of
// another incarnation of a job replaced (Note [Job incarnations]).
#include "controller/launch/kubernetes/kubernetes_launcher.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "controller/jobs/admission/memory_estimate.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

class KubernetesLauncherTest : public testing::FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    auto spec = parseJobSpec(
        "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm}\n"
        "spec: {workers: {count: 2}, model: {type: mlp}, data: {dataset: synthetic}, epochs: 1,\n"
        "       kubernetes: {resources: {requests: {cpu: \"2\"}}}}\n");
    ASSERT_TRUE(spec.isOk()) << spec.status();
    spec_ = *spec;
    KubernetesLauncherOptions o;
    o.nameSpace = "ml";
    o.defaultImage = "ddp-service:0.1.0";
    o.specOf = [this](const std::string& job) -> std::optional<JobSpec> {
      if (job == "fm") return spec_;
      return std::nullopt;
    };
    o.onExit = [this](const WorkerExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_.push_back(e);
    };
    o.logPollInterval = std::chrono::milliseconds(20);
    auto l = KubernetesLauncher::create(*client_, o);
    ASSERT_TRUE(l.isOk()) << l.status();
    launcher_ = std::move(*l);
    ASSERT_TRUE(testing::waitUntil([&] { return launcher_->ready().isOk(); })) << launcher_->ready();
    launch_.jobName = "fm";
    launch_.workers = 2;
    launch_.env.controllerUrl = "http://ddp.ddp-system.svc:8080";
    launch_.env.jobToken = "tok";
  }

  // The kubelet's part: the worker container ended with `code`.
  void podEnded(int slot, int code) {
    json pod = *api_.object("pods", "ml", "fm-worker-" + std::to_string(slot));
    pod["status"] = {{"phase", code == 0 ? "Succeeded" : "Failed"},
                     {"containerStatuses", json::array({{{"name", "worker"},
                                                         {"state", {{"terminated", {{"exitCode", code}, {"reason", "Error"}}}}}}})}};
    api_.put("pods", "ml", pod);
  }

  // Waits until `n` exits were reported, at most `limit` x 10 ms.
  std::vector<WorkerExit> waitForExits(size_t n, int limit = 300) {
    for (int i = 0; i < limit; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (exits_.size() >= n) return exits_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard<std::mutex> lock(mu_);
    return exits_;
  }

  std::string podUid(int slot) {
    auto p = api_.object("pods", "ml", "fm-worker-" + std::to_string(slot));
    return p ? (*p)["metadata"]["uid"].get<std::string>() : "";
  }

  // An object left by another controller (another incarnation of job fm): a worker pod of `slot`.
  void oldPod(int slot) {
    const std::string name = "fm-worker-" + std::to_string(slot);
    api_.put("pods", "ml", {{"apiVersion", "v1"}, {"kind", "Pod"},
                            {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "ddp-worker"},
                                                                      {"app.kubernetes.io/managed-by", "ddp-controller"},
                                                                      {"ddp.dev/job", "fm"},
                                                                      {"ddp.dev/slot", std::to_string(slot)}}}}},
                            {"spec", {{"containers", json::array({{{"name", "worker"}, {"image", "old"}}})}}},
                            {"status", {{"phase", "Running"}}}});
  }
  // The job's token Secret as the API server returns it: `data` in base64.
  void oldSecret(const std::string& base64Token) {
    api_.put("secrets", "ml", {{"apiVersion", "v1"}, {"kind", "Secret"},
                               {"metadata", {{"name", "fm-worker-token"},
                                             {"labels", {{"ddp.dev/job", "fm"}, {"app.kubernetes.io/managed-by", "ddp-controller"}}}}},
                               {"data", {{"token", base64Token}}}});
  }

  // Reads a followed log until it returned `want` (concatenated), at most 5 s.
  std::string readUntil(LogStream& s, const std::string& want) {
    std::string got;
    testing::waitUntil([&] {
      auto chunk = s.read(Deadline::after(std::chrono::milliseconds(50)));
      if (chunk.isOk()) got += *chunk;
      return got.size() >= want.size();
    });
    return got;
  }

  JobSpec spec_;
  JobLaunch launch_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  std::mutex mu_;
  std::vector<WorkerExit> exits_;
};

TEST_F(KubernetesLauncherTest, EnsureWorkersCreatesTheJobsObjectsOnce) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  EXPECT_TRUE(api_.object("services", "ml", "fm").has_value());
  auto secret = api_.object("secrets", "ml", "fm-worker-token");
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ((*secret)["stringData"]["token"], "tok");
  const json pod = *api_.object("pods", "ml", "fm-worker-1");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "2");
  const std::string uid = podUid(1);
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());  // idempotent
  EXPECT_EQ(podUid(1), uid);
  JobLaunch unknown = launch_;
  unknown.jobName = "nope";
  EXPECT_EQ(launcher_->ensureWorkers(unknown).code(), StatusCode::kNotFound);
}

TEST_F(KubernetesLauncherTest, AnEndedPodIsReportedOnceWithItsExitCode) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  podEnded(1, 3);
  auto exits = waitForExits(1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].workerId, "fm-w1");
  EXPECT_EQ(exits[0].slot, 1);
  EXPECT_EQ(exits[0].code, 3);
  EXPECT_FALSE(exits[0].ok());
  podEnded(1, 3);  // the kubelet writes the status again
  podEnded(0, 0);
  exits = waitForExits(2);
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[1].workerId, "fm-w0");
  EXPECT_TRUE(exits[1].ok());
  EXPECT_EQ(waitForExits(3, 20).size(), 2u);  // nothing reported twice
}

TEST_F(KubernetesLauncherTest, ReplaceDeletesAndRecreatesOnlyThatWorkersPod) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  const std::string uid0 = podUid(0), uid1 = podUid(1);
  podEnded(1, 137);
  waitForExits(1);
  ASSERT_TRUE(launcher_->replaceWorker("fm", "fm-w1").isOk());
  EXPECT_TRUE(testing::waitUntil([&] { return !podUid(1).empty() && podUid(1) != uid1; }));
  EXPECT_EQ(podUid(0), uid0);  // the other worker keeps running
  EXPECT_EQ(waitForExits(2, 20).size(), 1u);  // the ended pod's deletion is not a second exit
  // Held: the pod goes, its replacement waits for the release.
  launcher_->holdReplacements("fm", true);
  ASSERT_TRUE(launcher_->replaceWorker("fm", "fm-w0").isOk());
  EXPECT_TRUE(testing::waitUntil([&] { return podUid(0).empty(); }));
  auto exits = waitForExits(2);
  ASSERT_EQ(exits.size(), 2u);  // a running pod deleted: reported, as killed by the launcher
  EXPECT_TRUE(exits[1].killedByLauncher);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(podUid(0).empty());
  launcher_->holdReplacements("fm", false);
  EXPECT_TRUE(testing::waitUntil([&] { return !podUid(0).empty() && podUid(0) != uid0; }));
  EXPECT_EQ(launcher_->replaceWorker("fm", "other-w0").code(), StatusCode::kNotFound);
}

// Note [Several ranks per pod]: 4 ranks 2 to a pod are 2 pods; a pod's end is the exit of both
// of its ranks; replacing a rank replaces its pod once (the sibling's ask finds it done).
TEST_F(KubernetesLauncherTest, SeveralRanksPerPodAreOnePodReportedAndReplacedAsOne) {
  spec_.workers = {4, 4, 4, 2};
  launch_.workers = 4;
  launch_.perPod = 2;
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  ASSERT_EQ(api_.objects("pods", "ml").size(), 2u);
  const json pod1 = *api_.object("pods", "ml", "fm-worker-1");
  EXPECT_EQ(pod1["metadata"]["labels"]["ddp.dev/slot"], "1");
  const std::string uid0 = podUid(0), uid1 = podUid(1);
  podEnded(1, 1);  // the supervisor exits non-zero: a rank died, its sibling was stopped
  auto exits = waitForExits(2);
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].workerId, "fm-w2");
  EXPECT_EQ(exits[0].slot, 2);
  EXPECT_EQ(exits[1].workerId, "fm-w3");
  EXPECT_EQ(exits[1].code, 1);
  ASSERT_TRUE(launcher_->replaceWorker("fm", "fm-w3").isOk());
  ASSERT_TRUE(launcher_->replaceWorker("fm", "fm-w2").isOk());  // the sibling: already done
  ASSERT_TRUE(testing::waitUntil([&] { return !podUid(1).empty() && podUid(1) != uid1; }));
  const std::string fresh = podUid(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(podUid(1), fresh);  // the second ask did not delete the replacement
  EXPECT_EQ(podUid(0), uid0);
  EXPECT_EQ(waitForExits(3, 20).size(), 2u);
  // A rank is killed with its pod.
  ASSERT_TRUE(launcher_->killWorker("fm", "fm-w1", SIGKILL).isOk());
  EXPECT_TRUE(testing::waitUntil([&] { return podUid(0).empty(); }));
  exits = waitForExits(4);
  ASSERT_EQ(exits.size(), 4u);
  EXPECT_EQ(exits[2].workerId, "fm-w0");
  EXPECT_EQ(exits[3].workerId, "fm-w1");
  EXPECT_EQ(launcher_->replaceWorker("fm", "fm-w9x").code(), StatusCode::kNotFound);
}

TEST_F(KubernetesLauncherTest, LogsComeFromThePodLogApi) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  api_.setPodLog("ml", "fm-worker-0", "step 1\nstep 2\n");
  api_.setPodLog("ml", "fm-worker-1", "step 1\n");
  auto one = launcher_->openLog("fm", "fm-w0", {});
  ASSERT_TRUE(one.isOk()) << one.status();
  auto text = (*one)->read(Deadline::after(std::chrono::seconds(1)));
  ASSERT_TRUE(text.isOk());
  EXPECT_EQ(*text, "step 1\nstep 2\n");
  EXPECT_EQ((*one)->read(Deadline::after(std::chrono::seconds(1))).status().code(), StatusCode::kOutOfRange);
  auto all = launcher_->openLog("fm", "", {});
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(*(*all)->read(Deadline::after(std::chrono::seconds(1))), "[w0] step 1\n[w0] step 2\n[w1] step 1\n");
  const auto r = api_.requests();
  EXPECT_NE(std::find(r.begin(), r.end(), "GET /api/v1/namespaces/ml/pods/fm-worker-0/log?container=worker"), r.end());
}

TEST_F(KubernetesLauncherTest, AFollowedLogReturnsNewLinesAsTheyAreWritten) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  api_.setPodLog("ml", "fm-worker-0", "step 1\nstep 2\n");
  LogOptions follow;
  follow.follow = true;
  auto one = launcher_->openLog("fm", "fm-w0", follow);
  ASSERT_TRUE(one.isOk()) << one.status();
  EXPECT_EQ(readUntil(**one, "step 1\nstep 2\n"), "step 1\nstep 2\n");
  auto quiet = (*one)->read(Deadline::after(std::chrono::milliseconds(60)));
  ASSERT_TRUE(quiet.isOk());
  EXPECT_EQ(*quiet, "");  // nothing new: nothing repeated
  EXPECT_FALSE((*one)->done());
  api_.appendPodLog("ml", "fm-worker-0", "step 3\n");
  EXPECT_EQ(readUntil(**one, "step 3\n"), "step 3\n");
  // The pod is replaced: the fresh pod's log starts over, and the follower carries on with it.
  api_.setPodLog("ml", "fm-worker-0", "resumed from step 2\n");
  EXPECT_EQ(readUntil(**one, "resumed from step 2\n"), "resumed from step 2\n");
  const auto r = api_.requests();
  EXPECT_TRUE(std::any_of(r.begin(), r.end(), [](const std::string& q) {
    return q.find("GET /api/v1/namespaces/ml/pods/fm-worker-0/log?container=worker&timestamps=true&sinceTime=2025-") == 0;
  }));
  // Every worker, merged: a pod that has no log yet is skipped until it has one.
  auto all = launcher_->openLog("fm", "", follow);
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(readUntil(**all, "[w0] resumed from step 2\n"), "[w0] resumed from step 2\n");
  api_.appendPodLog("ml", "fm-worker-1", "step 9\n");
  EXPECT_EQ(readUntil(**all, "[w1] step 9\n"), "[w1] step 9\n");
}

TEST_F(KubernetesLauncherTest, ObjectsOfAnotherIncarnationOfTheJobAreReplaced) {
  // A previous leader ran job fm: its Secret holds another token, its pods run (one in a slot
  // this launch does not have).
  oldSecret("b2xkLXRva2Vu");  // "old-token"
  oldPod(0);
  oldPod(1);
  oldPod(5);
  const std::string old0 = podUid(0), old1 = podUid(1);
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  auto secret = api_.object("secrets", "ml", "fm-worker-token");
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ((*secret)["stringData"]["token"], "tok");
  EXPECT_FALSE(secret->contains("data"));  // replaced, not the old object
  EXPECT_FALSE(podUid(0).empty());
  EXPECT_NE(podUid(0), old0);
  EXPECT_NE(podUid(1), old1);
  EXPECT_EQ((*api_.object("pods", "ml", "fm-worker-0"))["spec"]["containers"][0]["image"], "ddp-service:0.1.0");
  EXPECT_FALSE(api_.object("pods", "ml", "fm-worker-5").has_value());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  const auto r = api_.requests();
  EXPECT_NE(std::find(r.begin(), r.end(), "DELETE /api/v1/namespaces/ml/pods/fm-worker-1?gracePeriodSeconds=0"), r.end());
  // The old pods' deletion is not an exit of this job's workers.
  EXPECT_EQ(waitForExits(1, 30).size(), 0u);
  // A relaunch of the same incarnation (a scale, a retry) keeps everything and reads nothing.
  const std::string new0 = podUid(0);
  const size_t requests = api_.requests().size();
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(podUid(0), new0);
  for (size_t i = requests; i < api_.requests().size(); ++i) {
    EXPECT_EQ(api_.requests()[i].find("GET /api/v1/namespaces/ml/secrets"), std::string::npos);
  }
}

TEST_F(KubernetesLauncherTest, ObjectsOfTheSameIncarnationAreKept) {
  // This job's objects, made before this launcher started (e.g. by this controller before a
  // restart): the Secret holds this launch's token, so the pod stays.
  oldSecret("dG9r");  // "tok"
  oldPod(0);
  const std::string uid0 = podUid(0);
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(podUid(0), uid0);
  EXPECT_FALSE(podUid(1).empty());  // the missing slot is filled
  EXPECT_EQ((*api_.object("secrets", "ml", "fm-worker-token"))["data"]["token"], "dG9r");
}

TEST_F(KubernetesLauncherTest, StopDeletesThePodsStillRunningAfterTheGraceAndForgetDeletesEverything) {
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  ASSERT_TRUE(launcher_->stopJob("fm", std::chrono::milliseconds(300)).isOk());
  podEnded(0, 0);  // worker 0 stops by itself within the grace: its pod stays (for its logs)
  ASSERT_TRUE(testing::waitUntil([&] { return !api_.object("pods", "ml", "fm-worker-1").has_value(); }));
  EXPECT_TRUE(api_.object("pods", "ml", "fm-worker-0").has_value());
  const auto r = api_.requests();
  EXPECT_NE(std::find(r.begin(), r.end(), "DELETE /api/v1/namespaces/ml/pods/fm-worker-1?gracePeriodSeconds=0"), r.end());
  EXPECT_EQ(waitForExits(2).size(), 2u);
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  EXPECT_FALSE(api_.object("services", "ml", "fm").has_value());
  EXPECT_FALSE(api_.object("secrets", "ml", "fm-worker-token").has_value());
  EXPECT_EQ(launcher_->killWorker("fm", "fm-w0", SIGKILL).code(), StatusCode::kNotFound);
}

// Note [Memory estimate] with Note [Several ranks per pod]: a pod's memory limit is shared by
// the ranks it runs, so a model that fits the whole limit but not a quarter of it is refused
// with 4 ranks to a pod, naming the limit and its ranks, and accepted with one.
TEST_F(KubernetesLauncherTest, APodsMemoryLimitIsSharedByItsRanks) {
  JobSpec spec = spec_;
  spec.workers.count = spec.workers.min = spec.workers.max = 4;
  const int64_t need = estimateWorkerMemory(spec).totalBytes();
  ASSERT_GT(need, 0);
  const std::string limit = std::to_string(2 * need);  // a quantity in bytes: twice one rank's need
  const auto one = launcher_->workerMemory(4, 1, limit);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->bytes, 2 * need);
  EXPECT_EQ(one->source, "the worker pod's memory limit " + limit);
  EXPECT_TRUE(checkWorkerMemory(spec, one).isOk());
  spec.workers.perPod = 4;
  const auto four = launcher_->workerMemory(4, 4, limit);
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(four->bytes, 2 * need / 4);
  EXPECT_EQ(four->field, "spec.kubernetes.resources.limits.memory");
  const Status refused = checkWorkerMemory(spec, four);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused;
  EXPECT_EQ(refused.message().rfind("spec.kubernetes.resources.limits.memory: ", 0), 0u) << refused;
  EXPECT_NE(refused.message().find("the worker pod's memory limit " + limit + " shared by its 4 ranks"),
            std::string::npos) << refused;
  // Twice per rank: a limit of 8 ranks' need fits 4 ranks of a pod.
  EXPECT_TRUE(checkWorkerMemory(spec, launcher_->workerMemory(4, 4, std::to_string(8 * need))).isOk());
}

// Note [Object ownership]: a job named like the controller's own Service (the chart's `ddp`)
// fails to launch, naming the Service and its owner, and forgetting the job leaves that Service
// (and a user's Secret of the token's name) alone.
TEST_F(KubernetesLauncherTest, ObjectsOfAnotherOwnerAreNeitherTakenNorDeleted) {
  const json chartService = {{"apiVersion", "v1"}, {"kind", "Service"},
                             {"metadata", {{"name", "fm"}, {"labels", {{"app.kubernetes.io/name", "ddp"},
                                                                       {"app.kubernetes.io/managed-by", "Helm"}}}}},
                             {"spec", {{"selector", {{"app.kubernetes.io/name", "ddp"}}}}}};
  const std::string chartUid = api_.put("services", "ml", chartService)["metadata"]["uid"];
  const Status st = launcher_->ensureWorkers(launch_);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("services/fm already exists and is not job fm's"), std::string::npos) << st;
  EXPECT_NE(st.message().find("app.kubernetes.io/managed-by=Helm"), std::string::npos) << st;
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  ASSERT_TRUE(api_.object("services", "ml", "fm").has_value());
  EXPECT_EQ((*api_.object("services", "ml", "fm"))["metadata"]["uid"], chartUid);
  EXPECT_FALSE(api_.object("secrets", "ml", "fm-worker-token").has_value());  // the job's own: deleted

  // A Secret owned by a Deployment under the token Secret's name: the same, at the first create.
  ASSERT_TRUE(client_->remove("/api/v1/namespaces/ml/services/fm").isOk());
  api_.put("secrets", "ml", {{"apiVersion", "v1"}, {"kind", "Secret"},
                             {"metadata", {{"name", "fm-worker-token"},
                                           {"ownerReferences", json::array({{{"apiVersion", "apps/v1"}, {"kind", "Deployment"},
                                                                             {"name", "web"}, {"uid", "web-uid"},
                                                                             {"controller", true}}})}}},
                             {"data", {{"token", "eA=="}}}});
  const Status secret = launcher_->ensureWorkers(launch_);
  EXPECT_EQ(secret.code(), StatusCode::kFailedPrecondition) << secret;
  EXPECT_NE(secret.message().find("secrets/fm-worker-token already exists and is not job fm's (owned by Deployment web)"),
            std::string::npos) << secret;
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  EXPECT_TRUE(api_.object("secrets", "ml", "fm-worker-token").has_value());
}

// Note [Worker pod security], against the fake's Pod Security admission (fake_admission.h): in
// a namespace enforcing restricted the default pods are admitted; the capSysNice opt-in is
// refused there and under baseline, naming the rule, and admitted in a privileged namespace.
TEST_F(KubernetesLauncherTest, PodSecurityAdmissionTakesTheDefaultPodsAndRefusesSysNice) {
  auto label = [&](const std::string& level) {
    api_.put("namespaces", "", {{"apiVersion", "v1"}, {"kind", "Namespace"},
                                {"metadata", {{"name", "ml"}, {"labels", {{"pod-security.kubernetes.io/enforce", level}}}}}});
  };
  label("restricted");
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  spec_.kubernetes.capSysNice = true;
  for (const std::string level : {"restricted", "baseline"}) {
    label(level);
    const Status st = launcher_->ensureWorkers(launch_);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;  // 403
    EXPECT_NE(st.message().find("violates PodSecurity \"" + level + ":latest\""), std::string::npos) << st;
    EXPECT_NE(st.message().find("\"SYS_NICE\""), std::string::npos) << st;
    EXPECT_TRUE(api_.objects("pods", "ml").empty());
    ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  }
  label("privileged");
  EXPECT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
}

}  // namespace
}  // namespace ddp::controller::kube
