// Leader election on a coordination.k8s.io/v1 Lease: the pure rules (lease_decision.h) with
// made-up times, and LeaderElector against FakeKubeApiServer (FAKED: the API server, real Lease
// paths and 409 on a stale resourceVersion) with an injected clock: two replicas never lead at
// once, a dead leader is replaced after the lease duration, a leader that cannot renew steps
// down, a standby is not ready, and a stopping leader hands over at once.
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
  std::unique_ptr<LeaderElector> elector(const std::string& id, const Clock& clock, LeaseTiming timing = {}) {
    LeaderElectorOptions o;
    o.nameSpace = "ddp-system";
    o.leaseName = "ddp-leader";
    o.identity = id;
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

  std::vector<std::string> stopped_;
};

TEST_F(KubernetesLeaderElectionTest, OneLeaderAndATakeOverAfterTheLeaseDuration) {
  FakeClock clock;
  auto a = elector("controller-a", clock);
  auto b = elector("controller-b", clock);
  EXPECT_TRUE(a->tryAcquireOrRenew());
  EXPECT_EQ(holder(), "controller-a");
  EXPECT_FALSE(b->tryAcquireOrRenew());
  EXPECT_TRUE(a->readiness().isOk());
  EXPECT_EQ(b->readiness().code(), StatusCode::kUnavailable);  // /readyz 503 on the standby
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

TEST_F(KubernetesLeaderElectionTest, ALeaderThatCannotRenewStepsDownBeforeTheLeaseExpires) {
  FakeClock clock;
  auto a = elector("controller-a", clock);
  ASSERT_TRUE(a->tryAcquireOrRenew());
  api_.requireToken("a-token-it-does-not-have");  // every call now fails (401)
  clock.advance(seconds(9));
  EXPECT_TRUE(a->tryAcquireOrRenew());  // within the renew deadline
  clock.advance(seconds(1));
  EXPECT_FALSE(a->tryAcquireOrRenew());  // 10 s without a renewal: steps down
  EXPECT_EQ(a->readiness().code(), StatusCode::kUnavailable);
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
