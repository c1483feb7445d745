// Leader election on a coordination.k8s.io/v1 Lease: the pure rules (lease_decision.h) with
// made-up times, and LeaderElector against FakeKubeApiServer (FAKED: the API server, real Lease
// paths and 409 on a stale resourceVersion) with an injected clock: two replicas never lead at
// once, a dead leader is replaced after the lease duration, a leader that cannot renew steps
// down, a stopping leader hands over at once, and the leader label follows the lease (Note
// [Leader label]).
#include "controller/kubernetes/leader_elector.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using std::chrono::seconds;
const std::string kLeases = "coordination.k8s.io/v1/leases";

TEST(KubernetesLeaseDecisionTest, Rules) {
  const LeaseTiming t;  // 15 s lease
  const TimePoint t0{};
  EXPECT_EQ(decideLease(false, "", t0, "a", t0, t), LeaseAction::kCreate);
  EXPECT_EQ(decideLease(true, "a", t0, "a", t0 + seconds(100), t), LeaseAction::kRenew);
  EXPECT_EQ(decideLease(true, "", t0, "a", t0, t), LeaseAction::kTakeOver);  // released
  EXPECT_EQ(decideLease(true, "b", t0, "a", t0 + seconds(14), t), LeaseAction::kWait);
  EXPECT_EQ(decideLease(true, "b", t0, "a", t0 + seconds(15), t), LeaseAction::kTakeOver);
  EXPECT_TRUE(stillLeading(t0, t0 + seconds(9), t));
  EXPECT_FALSE(stillLeading(t0, t0 + seconds(10), t));
  EXPECT_TRUE(t.validate().isOk());
  LeaseTiming bad;
  bad.renewDeadline = seconds(20);  // a leader would step down after a standby took over
  EXPECT_EQ(bad.validate().code(), StatusCode::kInvalidArgument);
}

class KubernetesLeaderElectionTest : public testing::FakeApiTest {
 protected:
  std::unique_ptr<LeaderElector> elector(const std::string& id, const Clock& clock, LeaseTiming timing = {},
                                         const std::string& podName = "") {
    LeaderElectorOptions o;
    o.nameSpace = "ddp-system";
    o.leaseName = "ddp-leader";
    o.identity = id;
    o.podName = podName;
    o.timing = timing;
    o.onStoppedLeading = [this, id] { stopped_.push_back(id); };
    auto e = LeaderElector::create(*client_, o, clock);
    EXPECT_TRUE(e.isOk()) << e.status();
    return std::move(*e);
  }

  std::string holder() {
    auto l = api_.object(kLeases, "ddp-system", "ddp-leader");
    return l ? (*l)["spec"].value("holderIdentity", "") : "(none)";
  }

  // A controller pod as the Deployment makes it; `leader`: with a label left from a leadership.
  void controllerPod(const std::string& name, bool leader) {
    nlohmann::json labels = {{"app.kubernetes.io/name", "ddp"}};
    if (leader) labels[kLeaderLabel] = "true";
    api_.put("pods", "ddp-system", {{"apiVersion", "v1"}, {"kind", "Pod"},
                                    {"metadata", {{"name", name}, {"labels", labels}}},
                                    {"spec", {{"containers", nlohmann::json::array({{{"name", "controller"}, {"image", "ddp"}}})}}}});
  }
  // The pods the controller's Service selects (its selector carries ddp.dev/leader=true).
  std::vector<std::string> labelledLeaders() {
    std::vector<std::string> out;
    for (const auto& pod : api_.objects("pods", "ddp-system")) {
      if (pod["metadata"].value("labels", nlohmann::json::object()).value(kLeaderLabel, "") == "true") {
        out.push_back(pod["metadata"]["name"]);
      }
    }
    return out;
  }

  std::vector<std::string> stopped_;
};

TEST_F(KubernetesLeaderElectionTest, OneLeaderAndATakeOverAfterTheLeaseDuration) {
  FakeClock clock;
  auto a = elector("controller-a", clock);
  auto b = elector("controller-b", clock);
  EXPECT_TRUE(a->tryAcquireOrRenew());
  EXPECT_EQ(holder(), "controller-a");
  EXPECT_FALSE(b->tryAcquireOrRenew());
  EXPECT_TRUE(a->leading());
  EXPECT_FALSE(b->leading());
  clock.advance(seconds(5));
  EXPECT_TRUE(a->tryAcquireOrRenew());   // renews
  EXPECT_FALSE(b->tryAcquireOrRenew());  // sees the renewal at t=5
  clock.advance(seconds(14));            // a is gone: no renewal since t=5
  EXPECT_FALSE(b->tryAcquireOrRenew());  // 14 s < 15 s
  clock.advance(seconds(1));
  EXPECT_TRUE(b->tryAcquireOrRenew());
  EXPECT_EQ(holder(), "controller-b");
  EXPECT_EQ((*api_.object(kLeases, "ddp-system", "ddp-leader"))["spec"]["leaseTransitions"], 1);
  // a comes back: it sees b's lease and stands by.
  EXPECT_FALSE(a->tryAcquireOrRenew());
  EXPECT_FALSE(a->leading());
  EXPECT_EQ(stopped_, (std::vector<std::string>{"controller-a"}));
}

// Note [Leader label]: the leader's pod, and only it, carries ddp.dev/leader=true; a standby
// whose pod kept the label from an earlier leadership removes it at its first attempt; the label
// moves with a take-over and goes when the leader stops.
TEST_F(KubernetesLeaderElectionTest, TheLeaderLabelFollowsTheLease) {
  FakeClock clock;
  controllerPod("pod-a", false);
  controllerPod("pod-b", true);  // restarted after leading: the label stayed on its pod
  auto a = elector("controller-a", clock, {}, "pod-a");
  auto b = elector("controller-b", clock, {}, "pod-b");
  EXPECT_TRUE(a->tryAcquireOrRenew());
  EXPECT_EQ(labelledLeaders(), (std::vector<std::string>{"pod-a", "pod-b"}));
  EXPECT_FALSE(b->tryAcquireOrRenew());
  EXPECT_EQ(labelledLeaders(), (std::vector<std::string>{"pod-a"}));
  clock.advance(seconds(15));  // a is gone without a word: b takes over
  ASSERT_TRUE(b->tryAcquireOrRenew());
  EXPECT_EQ(labelledLeaders(), (std::vector<std::string>{"pod-a", "pod-b"}));
  EXPECT_FALSE(a->tryAcquireOrRenew());  // a sees b's lease: steps down and unlabels at once
  EXPECT_EQ(labelledLeaders(), (std::vector<std::string>{"pod-b"}));
  b->stop();
  EXPECT_TRUE(labelledLeaders().empty());
  EXPECT_EQ(holder(), "");
}

TEST_F(KubernetesLeaderElectionTest, ALeaderThatCannotRenewStepsDownBeforeTheLeaseExpires) {
  FakeClock clock;
  auto a = elector("controller-a", clock);
  ASSERT_TRUE(a->tryAcquireOrRenew());
  api_.requireToken("a-token-it-does-not-have");  // every call now fails (401)
  clock.advance(seconds(9));
  EXPECT_TRUE(a->tryAcquireOrRenew());  // within the renew deadline
  clock.advance(seconds(1));
  EXPECT_FALSE(a->tryAcquireOrRenew());  // 10 s without a renewal: steps down
  EXPECT_FALSE(a->leading());
}

TEST_F(KubernetesLeaderElectionTest, OfTwoConcurrentWritesOneGetsAConflictAndStandsBy) {
  FakeClock clock;
  auto a = elector("controller-a", clock);
  auto b = elector("controller-b", clock);
  ASSERT_TRUE(a->tryAcquireOrRenew());
  clock.advance(seconds(20));
  EXPECT_FALSE(b->tryAcquireOrRenew());  // first look at a's record: wait
  clock.advance(seconds(16));
  // b decides to take over, but a renews between b's read and b's write: b's PUT is stale.
  api_.interfereOnNextWrite(kLeases, "ddp-system", "ddp-leader");
  EXPECT_FALSE(b->tryAcquireOrRenew());
  EXPECT_EQ(holder(), "controller-a");
  const auto r = api_.requests();
  EXPECT_NE(r.back().find("PUT /apis/coordination.k8s.io/v1/namespaces/ddp-system/leases/ddp-leader"), std::string::npos);
}

TEST_F(KubernetesLeaderElectionTest, StoppingLeaderReleasesTheLeaseForAStandby) {
  LeaseTiming quick;
  quick.leaseDuration = std::chrono::milliseconds(3000);
  quick.renewDeadline = std::chrono::milliseconds(2000);
  quick.retryPeriod = std::chrono::milliseconds(50);
  auto a = elector("controller-a", SystemClock::instance(), quick);
  auto b = elector("controller-b", SystemClock::instance(), quick);
  a->start();
  ASSERT_TRUE(testing::waitUntil([&] { return a->leading(); }));
  b->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(b->leading());
  const auto t0 = std::chrono::steady_clock::now();
  a->stop();
  EXPECT_TRUE(testing::waitUntil([&] { return b->leading(); }));
  // Well within the lease duration: the lease was released, not left to expire.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
  EXPECT_EQ(holder(), "controller-b");
  b->stop();
}

}  // namespace
}  // namespace ddp::controller::kube
