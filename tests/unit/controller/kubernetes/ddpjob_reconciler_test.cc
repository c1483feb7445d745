// DdpJobReconciler with the controller's real JobManager (SQLite job table in a temp dir) and
// the KubernetesLauncher, against FakeKubeApiServer (FAKED: the API server; no kubelet runs, so
// the worker pods are created but never start). A DDPJob becomes a job with pods owned by it and
// a status; a refused DDPJob gets phase Failed naming the field; deleting the DDPJob removes the
// job and its objects; ttlSecondsAfterFinished deletes a finished DDPJob; status writes follow
// Note [Status writes].
#include "controller/launch/kubernetes/ddpjob_reconciler.h"

#include <gtest/gtest.h>

#include <thread>

#include "controller/jobs/job_manager.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
const std::string kJobs = "ddp.dev/v1/ddpjobs";

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

class KubernetesReconcilerTest : public testing::FakeApiTest {
 protected:
  void SetUp() override {
    FakeApiTest::SetUp();
    auto store = SqliteJobStore::open(dir_.path() + "/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    store_ = std::move(*store);
    KubernetesLauncherOptions lo;
    lo.nameSpace = "ml";
    lo.defaultImage = "ddp-service:0.1.0";
    lo.specOf = [this](const std::string& job) -> std::optional<JobSpec> {
      auto s = jobs_->spec(job);
      return s.isOk() ? std::optional<JobSpec>(*s) : std::nullopt;
    };
    lo.ownerOf = [this](const std::string& job) { return reconciler_->ownerOf(job); };
    lo.onExit = [this](const WorkerExit& e) { jobs_->onWorkerExit(e); };
    auto launcher = KubernetesLauncher::create(*client_, lo);
    ASSERT_TRUE(launcher.isOk());
    launcher_ = std::move(*launcher);
    JobManagerOptions jo;
    jo.controllerUrl = "http://ddp.ml.svc:8080";
    jo.stopGrace = std::chrono::seconds(1);
    jobs_ = std::make_unique<JobManager>(jo, *store_, *launcher_);
    ASSERT_TRUE(jobs_->start().isOk());
    JobCalls calls;
    calls.submit = [this](const JobSpec& s) { return jobs_->submit(s); };
    calls.get = [this](const std::string& n) { return jobs_->get(n); };
    calls.cancel = [this](const std::string& n) { return jobs_->cancel(n); };
    calls.remove = [this](const std::string& n, Deadline d) { return jobs_->remove(n, d); };
    calls.scale = [this](const std::string& n, int w) { return jobs_->scale(n, w, "spec.workers.count"); };
    DdpJobReconcilerOptions ro;
    ro.watchNamespace = "ml";
    ro.tick = std::chrono::milliseconds(50);
    reconciler_ = std::make_unique<DdpJobReconciler>(*client_, ro, calls);
    reconciler_->start();
  }
  void TearDown() override {
    if (reconciler_) reconciler_->stop();
    if (jobs_) jobs_->stop();
    launcher_.reset();
  }

  static json ddpJob(const std::string& name, const std::string& extra = "") {
    return json::parse(R"({"apiVersion":"ddp.dev/v1","kind":"DDPJob","metadata":{"name":")" + name +
                       R"("},"spec":{"workers":{"count":2},"model":{"type":"mlp"},"data":{"dataset":"synthetic"},"epochs":1)" +
                       extra + "}}");
  }

  static bool waitUntil(const std::function<bool()>& cond, int tenths = 50) {
    return testing::waitUntil(cond, std::chrono::milliseconds(100) * tenths);
  }

  json statusOf(const std::string& name) {
    auto o = api_.object(kJobs, "ml", name);
    return o ? o->value("status", json::object()) : json::object();
  }

  ddp::test::TempDir dir_;
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<DdpJobReconciler> reconciler_;
};

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
  ASSERT_TRUE(jobs_->cancel("fm").isOk());  // the pods are deleted; the job ends Cancelled
  EXPECT_TRUE(waitUntil([&] { return !api_.object(kJobs, "ml", "fm").has_value(); }, 100))
      << jobPhaseName(jobs_->get("fm")->phase) << " " << jobs_->get("fm")->completionMs << " " << statusOf("fm");
  EXPECT_TRUE(waitUntil([&] { return !jobs_->get("fm").isOk(); }, 100));
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
