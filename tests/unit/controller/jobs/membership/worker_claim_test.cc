// Note [Worker incarnations]: who may take a worker id, as a pure function of what the
// controller knows of its holder, the claimant's nonce and an injected time.
#include "controller/jobs/membership/worker_claim.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
const Duration kFresh = std::chrono::milliseconds(1500);

SlotHolder liveHolder() {
  SlotHolder h;
  h.incarnation = "aaaa";
  h.processAlive = true;
  h.running = true;
  h.lastSeen = t0;
  h.pid = 42;
  return h;
}

TEST(WorkerClaimTest, AnEmptySlotIsTaken) {
  EXPECT_EQ(decideClaim(SlotHolder{}, "", t0, kFresh), ClaimVerdict::kAccept);
}

TEST(WorkerClaimTest, ANewProcessIsRefusedWhileTheHolderHeartbeats) {
  EXPECT_EQ(decideClaim(liveHolder(), "", t0 + std::chrono::milliseconds(900), kFresh), ClaimVerdict::kRefuse);
  EXPECT_EQ(decideClaim(liveHolder(), "bbbb", t0 + kFresh, kFresh), ClaimVerdict::kRefuse) << "another nonce too";
}

TEST(WorkerClaimTest, TheHolderItselfRejoins) {
  EXPECT_EQ(decideClaim(liveHolder(), "aaaa", t0, kFresh), ClaimVerdict::kAccept);
}

TEST(WorkerClaimTest, AClaimWaitsWhileTheHolderIsLateButNotSeenGone) {
  EXPECT_EQ(decideClaim(liveHolder(), "", t0 + std::chrono::seconds(2), kFresh), ClaimVerdict::kWait);
}

TEST(WorkerClaimTest, AHolderSeenGoneMakesWayForItsReplacement) {
  SlotHolder exited = liveHolder();
  exited.processAlive = false;
  EXPECT_EQ(decideClaim(exited, "", t0, kFresh), ClaimVerdict::kAccept);
  SlotHolder blamed = liveHolder();
  blamed.replacing = true;  // the hang detector's verdict: a replacement is on its way
  EXPECT_EQ(decideClaim(blamed, "", t0, kFresh), ClaimVerdict::kAccept);
  SlotHolder finished = liveHolder();
  finished.running = false;
  EXPECT_EQ(decideClaim(finished, "", t0, kFresh), ClaimVerdict::kAccept);
}

TEST(WorkerClaimTest, LaterCallsMustPresentTheHoldersNonce) {
  bool adopt = true;
  EXPECT_TRUE(incarnationMatches("aaaa", "aaaa", &adopt));
  EXPECT_FALSE(adopt);
  EXPECT_FALSE(incarnationMatches("aaaa", "bbbb", &adopt));
  EXPECT_TRUE(incarnationMatches("aaaa", "", &adopt)) << "an older client sends none";
  EXPECT_TRUE(incarnationMatches("", "cccc", &adopt)) << "a restarted controller adopts the first";
  EXPECT_TRUE(adopt);
}

}  // namespace
}  // namespace ddp::controller
