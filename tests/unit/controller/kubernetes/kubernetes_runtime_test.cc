// KubernetesRuntime's leader election against FakeKubeApiServer (FAKED: the API server; the
// other replica is the test writing the Lease as it would). Note [Fencing on leadership loss]:
// a leader whose Lease another replica took calls onLostLeadership within the renew deadline
// (ddp-controller's main exits then); a stop() that releases the lease does not.
#include "controller/kubernetes/kubernetes_runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;
const std::string kLeases = "coordination.k8s.io/v1/leases";

class KubernetesRuntimeTest : public testing::FakeApiTest {
 protected:
  std::unique_ptr<KubernetesRuntime> runtime() {
    KubernetesRuntimeOptions o;
    o.kube.server = api_.url();
    o.nameSpace = "ml";
    o.workerImage = "ddp-service:0.1.0";
    o.leaseName = "ddp-leader";
    o.identity = "controller-a";
    o.leaseTiming.leaseDuration = std::chrono::milliseconds(3000);
    o.leaseTiming.renewDeadline = std::chrono::milliseconds(2000);
    o.leaseTiming.retryPeriod = std::chrono::milliseconds(50);
    o.onLostLeadership = [this] { lost_++; };
    auto r = KubernetesRuntime::create(o);
    EXPECT_TRUE(r.isOk()) << r.status();
    return r.isOk() ? std::move(*r) : nullptr;
  }

  // No DDPJob exists, so the reconciler calls none of these.
  JobCalls noJobs() {
    JobCalls c;
    c.submit = [](const JobSpec&) -> Result<JobRecord> { return unavailable("unused"); };
    c.get = [](const std::string&) -> Result<JobRecord> { return notFound("unused"); };
    c.cancel = [](const std::string&) -> Result<JobRecord> { return notFound("unused"); };
    c.remove = [](const std::string&, Deadline) { return Status::ok(); };
    return c;
  }

  std::string holder() {
    auto l = api_.object(kLeases, "ml", "ddp-leader");
    return l ? (*l)["spec"].value("holderIdentity", "") : "(none)";
  }

  std::atomic<int> lost_{0};
};

TEST_F(KubernetesRuntimeTest, ALeaderWhoseLeaseIsTakenCallsOnLostLeadershipWithinTheRenewDeadline) {
  auto r = runtime();
  ASSERT_NE(r, nullptr);
  auto launcher = r->takeLauncher();
  r->start(noJobs(), [](const std::string&) { return std::optional<JobSpec>(); });
  ASSERT_TRUE(testing::waitUntil([&] { return holder() == "controller-a" && launcher->ready().isOk(); }))
      << launcher->ready();
  // Another replica writes itself into the Lease (as after a partition: it saw no renewal).
  json lease = *api_.object(kLeases, "ml", "ddp-leader");
  lease["spec"]["holderIdentity"] = "controller-b";
  lease["spec"]["renewTime"] = "2030-01-01T00:00:00.000000Z";
  api_.put(kLeases, "ml", lease);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(testing::waitUntil([&] { return lost_.load() > 0; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));  // the renew deadline
  EXPECT_EQ(lost_.load(), 1);
  EXPECT_TRUE(r->standby());  // a standby from now on (/readyz 200, off the Service's leader label)
  EXPECT_EQ(holder(), "controller-b");
  r->stop();
  EXPECT_EQ(lost_.load(), 1);
  EXPECT_EQ(holder(), "controller-b");  // not released: it was not ours any more
  launcher.reset();
}

TEST_F(KubernetesRuntimeTest, StopReleasesTheLeaseWithoutCallingOnLostLeadership) {
  auto r = runtime();
  ASSERT_NE(r, nullptr);
  auto launcher = r->takeLauncher();
  r->start(noJobs(), [](const std::string&) { return std::optional<JobSpec>(); });
  ASSERT_TRUE(testing::waitUntil([&] { return holder() == "controller-a"; }));
  r->stop();
  EXPECT_EQ(holder(), "");  // released for a standby
  EXPECT_EQ(lost_.load(), 0);
  launcher.reset();
}

// Note [Standby replicas]: onLeading (the controller starts its job manager there) runs only
// once this replica holds the lease, and once.
TEST_F(KubernetesRuntimeTest, AStandbyStartsItsJobsOnlyWhenItLeads) {
  // Another replica holds the lease and renews it (the test rewrites its renewTime).
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "ddp-leader"}, {"namespace", "ml"}}},
                {"spec",
                 {{"holderIdentity", "controller-b"},
                  {"leaseDurationSeconds", 3},
                  {"renewTime", "2030-01-01T00:00:00.000000Z"}}}};
  api_.put(kLeases, "ml", lease);
  auto r = runtime();
  ASSERT_NE(r, nullptr);
  auto launcher = r->takeLauncher();
  std::atomic<int> led{0};
  r->start(noJobs(), [](const std::string&) { return std::optional<JobSpec>(); }, [&] {
    ++led;
    return Status::ok();
  });
  for (int i = 0; i < 10; ++i) {  // 1 s: well within the other replica's lease
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    json l = *api_.object(kLeases, "ml", "ddp-leader");
    l["spec"]["renewTime"] = "2030-01-01T00:00:0" + std::to_string(i) + ".000000Z";
    api_.put(kLeases, "ml", l);
  }
  EXPECT_EQ(led.load(), 0);
  EXPECT_EQ(holder(), "controller-b");
  EXPECT_TRUE(r->standby());
  EXPECT_TRUE(launcher->ready().isOk());  // a standby is Ready (Note [Leader label])
  // The other replica releases the lease (as its stop() does): this one leads and starts its jobs.
  json l = *api_.object(kLeases, "ml", "ddp-leader");
  l["spec"]["holderIdentity"] = "";
  api_.put(kLeases, "ml", l);
  ASSERT_TRUE(testing::waitUntil([&] { return led.load() == 1 && holder() == "controller-a"; })) << holder();
  EXPECT_FALSE(r->standby());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(led.load(), 1);
  r->stop();
  launcher.reset();
}

}  // namespace
}  // namespace ddp::controller::kube
