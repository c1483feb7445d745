// MembershipState (controller/jobs/membership/membership_state.h): the late joiners' clock, a
// settled generation, and which retired workers still run.
#include "controller/jobs/membership/membership_state.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

TEST(MembershipStateTest, TheFirstLateJoinerStartsTheClock) {
  MembershipState s;
  s.noteLateJoin(at(3));
  s.noteLateJoin(at(7));
  EXPECT_EQ(s.firstLateJoinAt, at(3));
  s.generationFormed({"w0", "w1"});
  EXPECT_FALSE(s.firstLateJoinAt.has_value());
  EXPECT_EQ(s.lastMembers, (std::vector<std::string>{"w0", "w1"}));
}

TEST(MembershipStateTest, SettledWhenEveryMemberStepped) {
  MembershipState s;
  EXPECT_TRUE(s.settled({}));
  s.steppedInGeneration = {"w0"};
  EXPECT_FALSE(s.settled({"w0", "w1"}));
  s.steppedInGeneration.insert("w1");
  EXPECT_TRUE(s.settled({"w0", "w1"}));
}

TEST(MembershipStateTest, TheRetiredWorkersStillAlive) {
  MembershipState s;
  auto alive = [](const std::string& id) { return id == "w3" || id == "w0"; };
  EXPECT_TRUE(s.retiredAlive(alive).empty());
  s.retired = {"w2", "w3"};
  EXPECT_EQ(s.retiredAlive(alive), (std::vector<std::string>{"w3"})) << "w2 exited already; w0 is no retired one";
}

}  // namespace
}  // namespace ddp::controller
