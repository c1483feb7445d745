// The launcher against a FakeKubeApiServer that authorizes (FAKED: the API server and its RBAC
// authorizer, fake_rbac.h) with the rules of the chart's Role (charts/ddp/templates/role.yaml,
// written out here; KubernetesChartRbacTest reads the rendered chart itself). Issue 28 item 2:
// the job's objects carry ownerReferences with blockOwnerDeletion: true, which an API server
// enforcing owner permissions refuses unless the controller may update ddpjobs/finalizers.
// Also checks the fake's authorizer itself: verbs, subresources, namespaces, cluster scope.
#include "controller/launch/kubernetes/kubernetes_launcher.h"

#include <gtest/gtest.h>

#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
using testing::FakeRbac;
using testing::PolicyRule;

// The chart's Role (role.yaml), rule for rule.
std::vector<PolicyRule> chartRoleRules() {
  return {{{""}, {"pods"}, {"get", "list", "watch", "create", "patch", "delete"}},
          {{""}, {"pods/log"}, {"get"}},
          {{""}, {"services"}, {"get", "create", "delete"}},
          {{""}, {"secrets"}, {"get", "create", "delete"}},
          {{""}, {"events"}, {"create"}},
          {{"ddp.dev"}, {"ddpjobs"}, {"list", "watch", "delete"}},
          {{"ddp.dev"}, {"ddpjobs/status"}, {"patch"}},
          {{"ddp.dev"}, {"ddpjobs/finalizers"}, {"update"}},
          {{"scheduling.x-k8s.io", "scheduling.volcano.sh"}, {"podgroups"}, {"get", "create", "delete"}}};
}

class KubernetesLauncherRbacTest : public testing::FakeApiTest {
 protected:
  // A launcher of jobs owned by the DDPJob ml/fm (or by none: a REST job), under `rbac`.
  void startLauncher(FakeRbac rbac, bool owned = true) {
    api_.enforceRbac(std::move(rbac));
    auto spec = parseJobSpec(
        "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm}\n"
        "spec: {workers: {count: 2}, model: {type: mlp}, data: {dataset: synthetic}, epochs: 1}\n");
    ASSERT_TRUE(spec.isOk()) << spec.status();
    spec_ = *spec;
    KubernetesLauncherOptions o;
    o.nameSpace = "ml";
    o.defaultImage = "ddp-service:0.1.0";
    o.schedulerName = schedulerName_;
    o.specOf = [this](const std::string&) -> std::optional<JobSpec> { return spec_; };
    if (owned) o.ownerOf = [](const std::string& job) -> std::optional<JobOwner> { return JobOwner{job, "uid-fm"}; };
    auto l = KubernetesLauncher::create(*client_, o);
    ASSERT_TRUE(l.isOk()) << l.status();
    launcher_ = std::move(*l);
    ASSERT_TRUE(testing::waitUntil([&] { return launcher_->ready().isOk(); })) << launcher_->ready();
    launch_.jobName = "fm";
    launch_.workers = 2;
    launch_.env.controllerUrl = "http://ddp.ml.svc:8081";
    launch_.env.jobToken = "tok";
  }
  static FakeRbac roleInMl(std::vector<PolicyRule> rules) {
    FakeRbac rbac;
    rbac.grant({"ml", std::move(rules)});
    return rbac;
  }

  std::string schedulerName_;  // the launcher's (set before startLauncher)
  JobSpec spec_;
  JobLaunch launch_;
  std::unique_ptr<KubernetesLauncher> launcher_;
};

TEST_F(KubernetesLauncherRbacTest, TheChartsRoleLetsTheLauncherCreateOwnedObjects) {
  startLauncher(roleInMl(chartRoleRules()));
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  const json pod = *api_.object("pods", "ml", "fm-worker-0");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
  EXPECT_TRUE(api_.object("services", "ml", "fm").has_value());
  EXPECT_TRUE(api_.object("secrets", "ml", "fm-worker-token").has_value());
  EXPECT_TRUE(launcher_->forgetJob("fm").isOk());
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  EXPECT_TRUE(api_.refusals().empty()) << api_.refusals().front();
}

TEST_F(KubernetesLauncherRbacTest, WithoutTheFinalizersRuleOwnedObjectsAreForbidden) {
  FakeRbac rbac = roleInMl(chartRoleRules());
  rbac.revoke("update", "ddp.dev", "ddpjobs/finalizers");
  startLauncher(std::move(rbac));
  Status st = launcher_->ensureWorkers(launch_);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("cannot set blockOwnerDeletion"), std::string::npos) << st;
  EXPECT_NE(st.message().find("ddpjobs/finalizers"), std::string::npos) << st;
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  EXPECT_FALSE(api_.object("secrets", "ml", "fm-worker-token").has_value());
  ASSERT_FALSE(api_.refusals().empty());
  EXPECT_EQ(api_.refusals().front().rfind("POST /api/v1/namespaces/ml/secrets", 0), 0u) << api_.refusals().front();
}

// Note [Gang scheduler PodGroups]: the chart's Role lets the launcher make and remove a job's
// PodGroup for either gang scheduler; without the podgroups rule the launch is refused.
TEST_F(KubernetesLauncherRbacTest, TheChartsRoleCoversTheGangSchedulersPodGroups) {
  for (const char* scheduler : {"volcano", "scheduler-plugins-scheduler"}) {
    SCOPED_TRACE(scheduler);
    launcher_.reset();
    schedulerName_ = scheduler;
    startLauncher(roleInMl(chartRoleRules()), /*owned=*/false);
    const std::string resource = std::string(scheduler) == "volcano" ? "scheduling.volcano.sh/v1beta1/podgroups"
                                                                     : "scheduling.x-k8s.io/v1alpha1/podgroups";
    ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
    EXPECT_TRUE(api_.object(resource, "ml", "fm").has_value());
    EXPECT_TRUE(launcher_->forgetJob("fm").isOk());
    EXPECT_FALSE(api_.object(resource, "ml", "fm").has_value());  // a REST job's: the launcher removes it
    EXPECT_TRUE(api_.refusals().empty()) << api_.refusals().front();
  }
  launcher_.reset();
  FakeRbac rbac = roleInMl(chartRoleRules());
  rbac.revoke("create", "scheduling.volcano.sh", "podgroups");
  schedulerName_ = "volcano";
  startLauncher(std::move(rbac), /*owned=*/false);
  Status st = launcher_->ensureWorkers(launch_);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("PodGroup"), std::string::npos) << st;
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
}

// Note [Object ownership]: a PodGroup of the job's name that another object owns fails the job,
// naming it and its owner, and stays when the job is forgotten; one of an earlier DDPJob of the
// name is replaced by the job's own; the job's own is taken as it is. Under the chart's Role.
TEST_F(KubernetesLauncherRbacTest, APodGroupOfAnotherOwnerIsNeitherTakenNorDeleted) {
  const std::string resource = "scheduling.volcano.sh/v1beta1/podgroups";
  auto podGroup = [](const std::string& kind, const std::string& name, const std::string& uid) {
    const std::string apiVersion = kind == "DDPJob" ? "ddp.dev/v1" : "apps/v1";
    return json{{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
                {"metadata", {{"name", "fm"}, {"ownerReferences", json::array({{{"apiVersion", apiVersion}, {"kind", kind},
                                                                                {"name", name}, {"uid", uid},
                                                                                {"controller", true}}})}}},
                {"spec", {{"minMember", 8}}}};
  };
  schedulerName_ = "volcano";
  startLauncher(roleInMl(chartRoleRules()));
  const std::string theirs = api_.put(resource, "ml", podGroup("Deployment", "web", "web-uid"))["metadata"]["uid"];
  const Status st = launcher_->ensureWorkers(launch_);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("PodGroup for the volcano scheduler"), std::string::npos) << st;
  EXPECT_NE(st.message().find("podgroups/fm already exists and is not job fm's (owned by Deployment web)"),
            std::string::npos) << st;
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  ASSERT_TRUE(api_.object(resource, "ml", "fm").has_value());
  EXPECT_EQ((*api_.object(resource, "ml", "fm"))["metadata"]["uid"], theirs);
  EXPECT_EQ((*api_.object(resource, "ml", "fm"))["spec"]["minMember"], 8);

  // An earlier DDPJob fm's: replaced by this one's (minMember from spec.workers.min).
  api_.put(resource, "ml", podGroup("DDPJob", "fm", "uid-earlier"));
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  auto group = api_.object(resource, "ml", "fm");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], "uid-fm");
  EXPECT_EQ((*group)["spec"]["minMember"], 2);
  // The job's own, met again (a restarted controller): taken as it is.
  const std::string own = (*group)["metadata"]["uid"];
  ASSERT_TRUE(launcher_->forgetJob("fm").isOk());
  api_.put(resource, "ml", *group);
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ((*api_.object(resource, "ml", "fm"))["spec"]["minMember"], 2);
  EXPECT_TRUE(api_.refusals().empty()) << api_.refusals().front();
}

// A job submitted through the REST API has no DDPJob: no owner references, nothing to refuse.
TEST_F(KubernetesLauncherRbacTest, UnownedObjectsNeedNoFinalizersRule) {
  FakeRbac rbac = roleInMl(chartRoleRules());
  rbac.revoke("update", "ddp.dev", "ddpjobs/finalizers");
  startLauncher(std::move(rbac), /*owned=*/false);
  ASSERT_TRUE(launcher_->ensureWorkers(launch_).isOk());
  EXPECT_EQ(api_.objects("pods", "ml").size(), 2u);
  EXPECT_FALSE(api_.object("pods", "ml", "fm-worker-0")->at("metadata").contains("ownerReferences"));
}

// The authorizer: a verb, a subresource and a namespace each have to be named; a collection
// across all namespaces needs a cluster-wide grant; a refusal is 403 with the API server's text.
TEST_F(KubernetesLauncherRbacTest, TheFakeAuthorizesVerbResourceAndScope) {
  FakeRbac rbac = roleInMl({{{""}, {"pods"}, {"list"}}, {{"ddp.dev"}, {"ddpjobs"}, {"*"}}});
  api_.enforceRbac(rbac);
  EXPECT_TRUE(client_->get("/api/v1/namespaces/ml/pods").isOk());
  auto watch = client_->request("GET", "/api/v1/namespaces/ml/pods?watch=1&timeoutSeconds=1");
  ASSERT_TRUE(watch.isOk());
  EXPECT_EQ(watch->status, 403);
  EXPECT_NE(watch->body.find("cannot watch resource \\\"pods\\\""), std::string::npos) << watch->body;
  auto other = client_->get("/api/v1/namespaces/team-b/pods");
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("in the namespace \"team-b\""), std::string::npos) << other.status();
  auto everywhere = client_->get("/api/v1/pods");
  EXPECT_NE(everywhere.status().message().find("at the cluster scope"), std::string::npos) << everywhere.status();
  auto log = client_->request("GET", "/api/v1/namespaces/ml/pods/x/log");
  EXPECT_EQ(log->status, 403);
  EXPECT_NE(log->body.find("with subresource \\\"log\\\""), std::string::npos) << log->body;
  EXPECT_TRUE(client_->get("/apis/ddp.dev/v1/namespaces/ml/ddpjobs").isOk());  // "*" verbs
  auto status = client_->mergePatch("/apis/ddp.dev/v1/namespaces/ml/ddpjobs/fm/status", {{"status", json::object()}});
  EXPECT_EQ(status.status().code(), StatusCode::kFailedPrecondition);  // "ddpjobs" is not "ddpjobs/status"

  rbac.grant({"", {{{""}, {"pods"}, {"list", "watch"}}}});  // a ClusterRoleBinding
  api_.enforceRbac(rbac);
  EXPECT_TRUE(client_->get("/api/v1/pods").isOk());
  EXPECT_TRUE(client_->get("/api/v1/namespaces/team-b/pods").isOk());
  EXPECT_EQ(api_.refusals().size(), 5u);
}

}  // namespace
}  // namespace ddp::controller::kube
