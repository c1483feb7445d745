// A controller that serves several namespaces, or every one (--watch-namespace A,B,
// --watch-all-namespaces): DdpJobReconciler with the real JobManager and the KubernetesLauncher
// against FakeKubeApiServer (FAKED: the API server; no kubelet: pods are created, never run).
// Each DDPJob's pods, Service and Secret go to its own namespace, owned by it; a namespace not
// served is left alone; a name another namespace holds fails with NameTaken (Note [Names across
// namespaces]) until that one is gone; a REST job naming a namespace not served is refused
// (Note [Served namespaces]).
#include <gtest/gtest.h>

#include "controller/jobs/job_manager.h"
#include "controller/kubernetes/ddpjob_reconciler.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
const std::string kJobs = "ddp.dev/v1/ddpjobs";

class KubernetesNamespacesTest : public testing::FakeApiTest {
 protected:
  // Serves "ml" (home) and `more`, or every namespace with `all`.
  void start(std::vector<std::string> more, bool all) {
    auto store = SqliteJobStore::open(dir_.path() + "/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    store_ = std::move(*store);
    std::vector<std::string> served = {"ml"};
    served.insert(served.end(), more.begin(), more.end());
    KubernetesLauncherOptions lo;
    lo.nameSpace = "ml";
    lo.namespaces = served;
    lo.allNamespaces = all;
    lo.defaultImage = "ddp-service:0.1.0";
    lo.specOf = [this](const std::string& job) -> std::optional<JobSpec> {
      auto s = jobs_->spec(job);
      return s.isOk() ? std::optional<JobSpec>(*s) : std::nullopt;
    };
    lo.ownerOf = [this](const std::string& job) { return reconciler_->ownerOf(job); };
    lo.onExit = [this](const WorkerExit& e) { jobs_->onWorkerExit(e); };
    auto launcher = KubernetesLauncher::create(*client_, lo);
    ASSERT_TRUE(launcher.isOk()) << launcher.status();
    launcher_ = std::move(*launcher);
    ASSERT_TRUE(testing::waitUntil([&] { return launcher_->ready().isOk(); })) << launcher_->ready();
    JobManagerOptions jo;
    jo.controllerUrl = "http://ddp.ml.svc:8081";
    jo.stopGrace = std::chrono::seconds(1);
    jobs_ = std::make_unique<JobManager>(jo, *store_, *launcher_);
    ASSERT_TRUE(jobs_->start().isOk());
    JobCalls calls;
    calls.submit = [this](const JobSpec& s) { return jobs_->submit(s); };
    calls.get = [this](const std::string& n) { return jobs_->get(n); };
    calls.cancel = [this](const std::string& n) { return jobs_->cancel(n); };
    calls.remove = [this](const std::string& n, Deadline d) { return jobs_->remove(n, d); };
    DdpJobReconcilerOptions ro;
    if (!all) ro.watchNamespaces = served;
    ro.tick = std::chrono::milliseconds(50);
    reconciler_ = std::make_unique<DdpJobReconciler>(*client_, ro, calls);
    reconciler_->start();
  }
  void TearDown() override {
    if (reconciler_) reconciler_->stop();
    if (jobs_) jobs_->stop();
    launcher_.reset();
  }
  static json ddpJob(const std::string& name, int workers = 2, int64_t generation = 1) {
    return {{"apiVersion", "ddp.dev/v1"}, {"kind", "DDPJob"},
            {"metadata", {{"name", name}, {"generation", generation}}},
            {"spec", {{"workers", {{"count", workers}}}, {"model", {{"type", "mlp"}}},
                      {"data", {{"dataset", "synthetic"}}}, {"epochs", 1}}}};
  }
  std::string phaseOf(const std::string& ns, const std::string& name) {
    auto j = api_.object(kJobs, ns, name);
    return j ? j->value("status", json::object()).value("phase", "") : "";
  }

  ddp::test::TempDir dir_;
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<DdpJobReconciler> reconciler_;
};

TEST_F(KubernetesNamespacesTest, EachServedNamespacesDdpJobsRunThere) {
  start({"team-a"}, false);
  const json a = api_.put(kJobs, "team-a", ddpJob("a"));
  api_.put(kJobs, "ml", ddpJob("b", 1));
  api_.put(kJobs, "team-z", ddpJob("z"));  // not served
  ASSERT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "team-a").size() == 2; }));
  ASSERT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "ml").size() == 1; }));
  const json pod = *api_.object("pods", "team-a", "a-worker-1");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], a["metadata"]["uid"]);
  EXPECT_TRUE(api_.object("services", "team-a", "a").has_value());
  EXPECT_TRUE(api_.object("secrets", "team-a", "a-worker-token").has_value());
  EXPECT_FALSE(api_.object("services", "ml", "a").has_value());
  ASSERT_TRUE(testing::waitUntil([&] { return phaseOf("team-a", "a") == "Pending"; }));
  EXPECT_TRUE(api_.objects("pods", "team-z").empty());
  EXPECT_EQ(phaseOf("team-z", "z"), "");
  EXPECT_FALSE(jobs_->get("z").isOk());
  // A pod of the job ends in its namespace: the job hears of it through that namespace's watch.
  json ended = pod;
  ended["status"] = {{"phase", "Failed"}};
  api_.put("pods", "team-a", ended);
  ASSERT_TRUE(testing::waitUntil([&] {
    auto r = jobs_->get("a");
    return r.isOk() && (r->restarts > 0 || r->phase != JobPhase::kPending);
  })) << jobPhaseName(jobs_->get("a")->phase);
  // Deleting the DDPJob removes the job and its objects in its namespace.
  ASSERT_TRUE(client_->remove("/apis/ddp.dev/v1/namespaces/team-a/ddpjobs/a").isOk());
  ASSERT_TRUE(testing::waitUntil([&] { return !jobs_->get("a").isOk(); }));
  EXPECT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "team-a").empty(); }));
  EXPECT_FALSE(api_.object("secrets", "team-a", "a-worker-token").has_value());
}

TEST_F(KubernetesNamespacesTest, EveryNamespaceThroughClusterWideWatches) {
  start({}, true);
  api_.put(kJobs, "anywhere", ddpJob("w"));
  ASSERT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "anywhere").size() == 2; }));
  ASSERT_TRUE(testing::waitUntil([&] { return phaseOf("anywhere", "w") == "Pending"; }));
  bool ddpJobsEverywhere = false, podsEverywhere = false;
  for (const std::string& r : api_.requests()) {
    ddpJobsEverywhere |= r.rfind("GET /apis/ddp.dev/v1/ddpjobs?", 0) == 0;
    podsEverywhere |= r.rfind("GET /api/v1/pods?", 0) == 0;
  }
  EXPECT_TRUE(ddpJobsEverywhere);
  EXPECT_TRUE(podsEverywhere);
}

// Note [Names across namespaces].
TEST_F(KubernetesNamespacesTest, ANameHeldInAnotherNamespaceFailsUntilItIsFree) {
  start({"team-a"}, false);
  api_.put(kJobs, "ml", ddpJob("fm"));
  ASSERT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "ml").size() == 2; }));
  api_.put(kJobs, "team-a", ddpJob("fm", 1));
  ASSERT_TRUE(testing::waitUntil([&] { return phaseOf("team-a", "fm") == "Failed"; }));
  const json status = api_.object(kJobs, "team-a", "fm")->at("status");
  EXPECT_EQ(status["conditions"][0]["reason"], "NameTaken");
  EXPECT_NE(status.value("message", "").find("ml/fm holds the name"), std::string::npos) << status;
  bool event = false;
  for (const json& e : api_.objects("events", "team-a")) event |= e.value("reason", "") == "NameTaken";
  EXPECT_TRUE(event);
  EXPECT_TRUE(api_.objects("pods", "team-a").empty());
  EXPECT_EQ(jobs_->get("fm")->workers.size(), 2u);  // the ml job is untouched
  EXPECT_EQ(phaseOf("ml", "fm"), "Pending");

  ASSERT_TRUE(client_->remove("/apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm").isOk());
  ASSERT_TRUE(testing::waitUntil([&] { return !jobs_->get("fm").isOk() && api_.objects("pods", "ml").empty(); }));
  api_.put(kJobs, "team-a", ddpJob("fm", 1, 2));  // its spec changed: a new generation
  ASSERT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "team-a").size() == 1; }));
  EXPECT_TRUE(testing::waitUntil([&] { return phaseOf("team-a", "fm") == "Pending"; })) << phaseOf("team-a", "fm");
}

// Note [Served namespaces]: a job from the REST API may name a served namespace, not another.
TEST_F(KubernetesNamespacesTest, ARestJobMayNameOnlyAServedNamespace) {
  start({"team-a"}, false);
  auto parse = [](const std::string& ns) {
    auto s = parseJobSpec("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: r, namespace: " + ns +
                          "}\nspec: {workers: {count: 1}, model: {type: mlp}, data: {dataset: synthetic}, epochs: 1}\n");
    EXPECT_TRUE(s.isOk()) << s.status();
    return *s;
  };
  auto other = jobs_->submit(parse("team-z"));
  ASSERT_TRUE(other.isOk()) << other.status();
  ASSERT_TRUE(testing::waitUntil([&] { return jobs_->get("r")->phase == JobPhase::kFailed; }));
  const std::string why = jobs_->get("r")->conditions.back().message;
  EXPECT_NE(why.find("metadata.namespace: 'team-z' is not a namespace this controller serves (ml, team-a"),
            std::string::npos) << why;
  EXPECT_TRUE(api_.objects("pods", "team-z").empty());
  ASSERT_TRUE(jobs_->remove("r", Deadline::after(std::chrono::seconds(5))).isOk());
  ASSERT_TRUE(jobs_->submit(parse("team-a")).isOk());
  EXPECT_TRUE(testing::waitUntil([&] { return api_.objects("pods", "team-a").size() == 1; }));
}

}  // namespace
}  // namespace ddp::controller::kube
