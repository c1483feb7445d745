// The chart's own RBAC (charts/ddp rendered by `helm template`) against the controller: the
// fake API server (FAKED: the API server and its authorizer, fake_rbac.h) grants the
// controller's ServiceAccount exactly what the rendered Roles, ClusterRoles and bindings give
// it, and ddp-controller's Controller (in process, --launcher kubernetes, leader election) runs
// a DDPJob: every request it makes must be allowed. Without the Role's ddpjobs/finalizers rule
// (issue 28 item 2) the same run gets 403 for the job's owned objects.
// The manifest comes from DDP_CHART_MANIFEST (tests/kubernetes/check.sh rbac renders the chart
// and runs this program; ctest: KubernetesChartRbac); without it these tests skip.
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

// The grants of ServiceAccount ml/ddp in the rendered chart (release "ddp", namespace "ml").
std::optional<FakeRbac> chartRbac() {
  const char* path = std::getenv("DDP_CHART_MANIFEST");
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
 protected:
  void SetUp() override {
    rbac_ = chartRbac();
    if (!rbac_) GTEST_SKIP() << "DDP_CHART_MANIFEST is not set (tests/kubernetes/check.sh rbac sets it)";
    ASSERT_TRUE(api_.start().isOk());
  }
  // The controller as the chart starts it (its flags), against the fake.
  Result<std::unique_ptr<Controller>> startController() {
    auto config = parseControllerConfig(
        {"--state-dir", dir_.path(), "--listen", "127.0.0.1:0", "--launcher", "kubernetes", "--worker-image",
         "ddp-service:0.1.0", "--watch-namespace", "ml", "--leader-election-lease", "ddp-leader", "--kube-server",
         api_.url()},
        [](const std::string& name) -> std::optional<std::string> {
          if (name == "POD_NAME") return "ddp-7d9f-abc";
          return std::nullopt;
        });
    if (!config.isOk()) return config.status();
    return Controller::start(*config);
  }
  void submitJob() {
    api_.put("ddp.dev/v1/ddpjobs", "ml",
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

}  // namespace
}  // namespace ddp::controller
