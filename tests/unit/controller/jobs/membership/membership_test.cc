// Elastic membership decisions (pure, injected time): Note [Elastic membership] in
// controller/jobs/membership/membership.h.
#include "controller/jobs/membership/membership.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

MembershipFacts running(int members, int target, int max) {
  MembershipFacts f;
  f.running = true;
  for (int i = 0; i < members; ++i) f.members.push_back("j-w" + std::to_string(i));
  f.target = target;
  f.maxWorkers = max;
  f.gather = std::chrono::seconds(2);
  f.now = at(10);
  return f;
}

TEST(MembershipTest, NothingChangesWithoutJoinersOrRetirements) {
  EXPECT_FALSE(decideMembership(running(3, 4, 4)).endGeneration);
  EXPECT_FALSE(decideMembership(running(4, 4, 4)).endGeneration);
}

TEST(MembershipTest, AReplacementThatJoinsLateEndsTheGenerationAtOnceWhenItFillsTheTarget) {
  MembershipFacts f = running(3, 4, 4);
  f.lateJoiners = {"j-w3"};
  f.firstLateJoinAt = at(10);
  MembershipDecision d = decideMembership(f);
  EXPECT_TRUE(d.endGeneration);
  EXPECT_EQ(d.reason, "WorkersJoined");
  EXPECT_NE(d.message.find("j-w3 joined"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("(4 of at most 4 workers)"), std::string::npos) << d.message;
}

TEST(MembershipTest, JoinersAreGatheredUntilTheTargetIsFilledOrTheGatherTimePassed) {
  MembershipFacts f = running(2, 4, 4);
  f.lateJoiners = {"j-w2"};
  f.firstLateJoinAt = at(9);
  f.now = at(10);
  EXPECT_FALSE(decideMembership(f).endGeneration) << "one of two joiners, 1 s of 2 s gathered";
  f.now = at(11);
  EXPECT_TRUE(decideMembership(f).endGeneration) << "the gather time passed";
  f.now = at(10);
  f.lateJoiners = {"j-w2", "j-w3"};
  EXPECT_TRUE(decideMembership(f).endGeneration) << "both joined: the target is filled";
}

TEST(MembershipTest, AWorldAtMaxTakesNoJoiner) {
  MembershipFacts f = running(4, 4, 4);
  f.lateJoiners = {"j-w9"};
  f.firstLateJoinAt = at(0);
  EXPECT_FALSE(decideMembership(f).endGeneration);
  // Above the target but below max (an external launcher's extra worker): taken after gathering.
  f = running(4, 4, 6);
  f.lateJoiners = {"j-w9"};
  f.firstLateJoinAt = at(0);
  EXPECT_TRUE(decideMembership(f).endGeneration);
}

TEST(MembershipTest, AScaleDownEndsTheGenerationWithoutTheRetiredMembers) {
  MembershipFacts f = running(4, 2, 4);
  f.retiring = {"j-w3", "j-w2"};
  MembershipDecision d = decideMembership(f);
  EXPECT_TRUE(d.endGeneration);
  EXPECT_EQ(d.reason, "ScaledDown");
  EXPECT_NE(d.message.find("scaled to 2 worker(s)"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("without j-w2, j-w3"), std::string::npos) << d.message;
  // A retired worker that joins late is no joiner.
  f = running(2, 2, 4);
  f.retiring = {"j-w3"};
  f.lateJoiners = {"j-w3"};
  f.firstLateJoinAt = at(0);
  EXPECT_FALSE(decideMembership(f).endGeneration);
}

TEST(MembershipTest, AGenerationThatHasNotSteppedYetIsNotEnded) {
  MembershipFacts f = running(3, 4, 4);
  f.lateJoiners = {"j-w3"};
  f.firstLateJoinAt = at(0);
  f.settled = false;
  EXPECT_FALSE(decideMembership(f).endGeneration) << "a member may still be connecting to its peers";
  f.lateJoiners.clear();
  f.retiring = {"j-w2"};
  EXPECT_FALSE(decideMembership(f).endGeneration);
  f.settled = true;
  EXPECT_TRUE(decideMembership(f).endGeneration);
}

TEST(MembershipTest, NotRunningDecidesNothing) {
  MembershipFacts f = running(3, 4, 4);
  f.lateJoiners = {"j-w3"};
  f.firstLateJoinAt = at(0);
  f.running = false;
  EXPECT_FALSE(decideMembership(f).endGeneration);
}

TEST(MembershipTest, ValidateScaleNamesTheFieldAndTheBounds) {
  WorkersSpec w;
  w.min = 2;
  w.count = 3;
  w.max = 4;
  EXPECT_TRUE(validateScale(w, 2, 256, "workers").isOk());
  EXPECT_TRUE(validateScale(w, 4, 256, "workers").isOk());
  for (int bad : {0, 1, 5}) {
    Status st = validateScale(w, bad, 256, "workers");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "workers: " + std::to_string(bad) +
                                " is outside [spec.workers.min, spec.workers.max] = [2, 4]");
  }
  Status st = validateScale(w, 4, 3, "spec.workers.count");
  EXPECT_EQ(st.message(), "spec.workers.count: 4 is more than the launcher can start (3)");
}

// Note [Several ranks per pod]: a scale adds or retires whole pods.
TEST(MembershipTest, ValidateScaleTakesWholePodsOnly) {
  WorkersSpec w{4, 2, 8, 2};
  EXPECT_TRUE(validateScale(w, 6, 256, "spec.workers.count").isOk());
  Status st = validateScale(w, 5, 256, "spec.workers.count");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "spec.workers.count: 5 is not a multiple of spec.workers.perPod (2 ranks per pod)");
}

TEST(MembershipTest, RetiredByTakesTheHighestSlotsFirst) {
  std::vector<std::pair<std::string, int>> slots = {{"j-w0", 0}, {"j-w3", 3}, {"j-w1", 1}, {"j-w10", 10}, {"j-w2", 2}};
  EXPECT_EQ(retiredBy(slots, 2), (std::vector<std::string>{"j-w10", "j-w3", "j-w2"}));
  EXPECT_TRUE(retiredBy(slots, 11).empty());
}

}  // namespace
}  // namespace ddp::controller
