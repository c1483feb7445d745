// The chart's own RBAC (charts/ddp rendered by `helm template`) against the controller: the
// fake API server (FAKED: the API server and its authorizer, fake_rbac.h) grants the
// controller's ServiceAccount exactly what the rendered Roles, ClusterRoles and bindings give
// it, and ddp-controller's Controller (in process, --launcher kubernetes, leader election) runs
// a DDPJob: every request it makes must be allowed. Without the Role's ddpjobs/finalizers rule
// (issue 28 item 2) the same run gets 403 for the job's owned objects. Rendered with
// controller.watchNamespaces or controller.watchAllNamespaces, the chart lets the controller
// (started with the flags the chart gives it) run a DDPJob of another namespace there; the
// default rendering does not.
// The manifests come from DDP_CHART_MANIFEST, DDP_CHART_MANIFEST_NAMESPACES (watchNamespaces:
// [team-b]) and DDP_CHART_MANIFEST_CLUSTER (watchAllNamespaces) (tests/kubernetes/check.sh rbac
// renders the chart and runs this program; ctest: KubernetesChartRbac); without them these
// tests skip.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller {
namespace {

using kube::testing::FakeKubeApiServer;
using kube::testing::FakeRbac;
using kube::testing::waitUntil;
using nlohmann::json;

// The grants of ServiceAccount ml/ddp in the rendered chart (release "ddp", namespace "ml") that
// the environment variable `var` names.
std::optional<FakeRbac> chartRbac(const char* var = "DDP_CHART_MANIFEST") {
  const char* path = std::getenv(var);
  if (path == nullptr) return std::nullopt;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  auto rbac = FakeRbac::fromManifest(text.str(), "ml", "ddp");
  EXPECT_TRUE(rbac.isOk()) << rbac.status();
  return rbac.isOk() ? std::optional<FakeRbac>(*rbac) : std::nullopt;
}

class KubernetesChartRbacTest : public ::testing::Test {
 public:
  void SetUp() override {
    rbac_ = chartRbac();
    if (!rbac_) GTEST_SKIP() << "DDP_CHART_MANIFEST is not set (tests/kubernetes/check.sh rbac sets it)";
    ASSERT_TRUE(api_.start().isOk());
  }
  // The controller as the chart starts it (its flags, `watch` those of the namespaces), against
  // the fake.
  Result<std::unique_ptr<Controller>> startController(std::vector<std::string> watch = {"--watch-namespace=ml"}) {
    std::vector<std::string> args = {"--state-dir", dir_.path(), "--listen", "127.0.0.1:0", "--launcher",
                                     "kubernetes", "--worker-image", "ddp-service:0.1.0", "--leader-election-lease",
                                     "ddp-leader", "--token-secret", "ddp-api-token", "--kube-server", api_.url()};
    args.insert(args.end(), watch.begin(), watch.end());
    auto config = parseControllerConfig(
        args,
        [](const std::string& name) -> std::optional<std::string> {
          if (name == "POD_NAME") return "ddp-7d9f-abc";
          return std::nullopt;
        });
    if (!config.isOk()) return config.status();
    return Controller::start(*config);
  }
  void submitJob(const std::string& ns = "ml") {
    api_.put("ddp.dev/v1/ddpjobs", ns,
             json::parse(R"({"metadata":{"name":"fm"},"spec":{"workers":{"count":2},"model":{"type":"mlp"},)"
                         R"("data":{"dataset":"synthetic"},"epochs":1}})"));
  }
  std::string refusals() const {
    std::string all;
    for (const std::string& r : api_.refusals()) all += r + "\n";
    return all;
  }

  std::optional<FakeRbac> rbac_;
  FakeKubeApiServer api_;
  ddp::test::TempDir dir_;
};

TEST_F(KubernetesChartRbacTest, TheChartsRolesLetTheControllerRunADdpJob) {
  api_.enforceRbac(*rbac_);
  auto controller = startController();
  ASSERT_TRUE(controller.isOk()) << controller.status();
  ASSERT_TRUE(waitUntil([&] { return (*controller)->launcher().ready().isOk(); })) << (*controller)->launcher().ready();
  submitJob();
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").size() == 2; })) << refusals();
  EXPECT_TRUE(api_.object("services", "ml", "fm").has_value());
  EXPECT_TRUE(api_.object("secrets", "ml", "fm-worker-token").has_value());
  EXPECT_TRUE(api_.object("secrets", "ml", "ddp-api-token").has_value());  // --token-secret created it
  ASSERT_TRUE(waitUntil([&] {
    auto j = api_.object("ddp.dev/v1/ddpjobs", "ml", "fm");
    return j && j->contains("status") && (*j)["status"].value("phase", "") == "Pending";
  })) << refusals();
  ASSERT_TRUE((*controller)->jobs().cancel("fm").isOk());  // stops (deletes) the pods
  ASSERT_TRUE(waitUntil([&] { return api_.objects("pods", "ml").empty(); }, std::chrono::seconds(10))) << refusals();
  (*controller)->stop();  // releases the Lease (update)
  EXPECT_EQ(api_.object("coordination.k8s.io/v1/leases", "ml", "ddp-leader").value()["spec"]["holderIdentity"], "");
  EXPECT_EQ(refusals(), "");
}

TEST_F(KubernetesChartRbacTest, WithoutTheFinalizersRuleTheJobsObjectsAreForbidden) {
  rbac_->revoke("update", "ddp.dev", "ddpjobs/finalizers");
  api_.enforceRbac(*rbac_);
  auto controller = startController();
  ASSERT_TRUE(controller.isOk()) << controller.status();
  ASSERT_TRUE(waitUntil([&] { return (*controller)->launcher().ready().isOk(); })) << (*controller)->launcher().ready();
  submitJob();
  ASSERT_TRUE(waitUntil([&] { return refusals().find("cannot set blockOwnerDeletion") != std::string::npos; }))
      << refusals();
  EXPECT_TRUE(api_.objects("pods", "ml").empty());
  (*controller)->stop();
}

// The controller serves team-b beside ml (the chart's flags for each rendering): its DDPJob's
// objects go there, and the rendered RBAC must allow exactly that.
void runsAJobInTeamB(KubernetesChartRbacTest& t, FakeKubeApiServer& api, const FakeRbac& rbac,
                     std::vector<std::string> flags, bool allowed) {
  api.enforceRbac(rbac);
  auto controller = t.startController(std::move(flags));
  ASSERT_TRUE(controller.isOk()) << controller.status();
  ASSERT_TRUE(waitUntil([&] { return (*controller)->launcher().ready().isOk() || !api.refusals().empty(); }));
  t.submitJob("team-b");
  if (allowed) {
    ASSERT_TRUE(waitUntil([&] { return api.objects("pods", "team-b").size() == 2; })) << t.refusals();
    ASSERT_TRUE(waitUntil([&] {
      auto j = api.object("ddp.dev/v1/ddpjobs", "team-b", "fm");
      return j && j->value("status", json::object()).value("phase", "") == "Pending";
    })) << t.refusals();
    EXPECT_EQ(t.refusals(), "");
  } else {
    ASSERT_TRUE(waitUntil([&] { return t.refusals().find("namespace \"team-b\"") != std::string::npos; }));
    EXPECT_TRUE(api.objects("pods", "team-b").empty());
  }
  (*controller)->stop();
}

TEST_F(KubernetesChartRbacTest, WatchNamespacesGrantsEachNamespace) {
  auto rbac = chartRbac("DDP_CHART_MANIFEST_NAMESPACES");
  if (!rbac) GTEST_SKIP() << "DDP_CHART_MANIFEST_NAMESPACES is not set";
  runsAJobInTeamB(*this, api_, *rbac, {"--watch-namespace=ml,team-b"}, true);
}

TEST_F(KubernetesChartRbacTest, WatchAllNamespacesGrantsTheCluster) {
  auto rbac = chartRbac("DDP_CHART_MANIFEST_CLUSTER");
  if (!rbac) GTEST_SKIP() << "DDP_CHART_MANIFEST_CLUSTER is not set";
  runsAJobInTeamB(*this, api_, *rbac, {"--watch-namespace=ml", "--watch-all-namespaces"}, true);
}

// The default rendering grants the release namespace only: serving team-b too is refused.
TEST_F(KubernetesChartRbacTest, TheDefaultRbacDoesNotReachAnotherNamespace) {
  runsAJobInTeamB(*this, api_, *rbac_, {"--watch-namespace=ml,team-b"}, false);
}

}  // namespace
}  // namespace ddp::controller
