// Rendezvous as a pure state machine with an injected clock (no processes, no threads).
#include "controller/rendezvous/rendezvous.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::seconds;

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

RendezvousConfig cfg(int min, int max, double lastCall = 30) {
  RendezvousConfig c;
  c.minWorkers = min;
  c.maxWorkers = max;
  c.lastCall = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(lastCall));
  return c;
}

TEST(RendezvousTest, ClosesAtMaxWithRanksInNaturalIdOrder) {
  Rendezvous r(cfg(2, 3));
  EXPECT_EQ(r.join("job-w10", at(0)), 1);
  EXPECT_EQ(r.join("job-w2", at(1)), 1);
  EXPECT_TRUE(r.open());
  EXPECT_EQ(r.join("job-w1", at(2)), 1);
  ASSERT_FALSE(r.open());
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"job-w1", "job-w2", "job-w10"}));
  EXPECT_EQ(r.generation(), 1);
  EXPECT_EQ(r.active()->closedAt, at(2));
}

TEST(RendezvousTest, ClosesAtMinOnlyAfterTheLastCall) {
  Rendezvous r(cfg(2, 4, 10));
  r.join("a", at(0));
  EXPECT_FALSE(r.nextDeadline().has_value());
  r.join("b", at(5));
  ASSERT_TRUE(r.nextDeadline().has_value());
  EXPECT_EQ(*r.nextDeadline(), at(15));
  EXPECT_FALSE(r.tick(at(14.9)));
  EXPECT_TRUE(r.open());
  r.join("c", at(14.95));  // joining during the last call does not restart it
  EXPECT_TRUE(r.tick(at(15)));
  EXPECT_EQ(r.active()->worldSize(), 3);
}

TEST(RendezvousTest, DroppingBelowMinCancelsTheLastCall) {
  Rendezvous r(cfg(2, 4, 10));
  r.join("a", at(0));
  r.join("b", at(1));
  r.leave("b", at(2));
  EXPECT_FALSE(r.tick(at(20)));
  EXPECT_TRUE(r.open());
  r.join("c", at(21));
  EXPECT_FALSE(r.tick(at(30)));
  EXPECT_TRUE(r.tick(at(31)));
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"a", "c"}));
}

TEST(RendezvousTest, LateJoinerWaitsForTheNextRound) {
  Rendezvous r(cfg(2, 2));
  r.join("a", at(0));
  r.join("b", at(0));
  ASSERT_EQ(r.generation(), 1);
  EXPECT_EQ(r.join("z", at(1)), 2);  // the next generation
  EXPECT_EQ(r.lateJoiners(), (std::vector<std::string>{"z"}));
  EXPECT_FALSE(r.active()->rankOf("z").has_value());
  EXPECT_EQ(r.join("a", at(2)), 1);  // a member registering again: idempotent
  EXPECT_EQ(r.active()->worldSize(), 2);
}

TEST(RendezvousTest, SurvivorsKeepTheirRankOrderNewcomersFollow) {
  Rendezvous r(cfg(3, 3));
  r.join("w0", at(0));
  r.join("w1", at(0));
  r.join("w2", at(0));
  ASSERT_EQ(r.generation(), 1);
  r.endGeneration(at(5));  // w1 died
  EXPECT_TRUE(r.open());
  EXPECT_FALSE(r.isCurrent(1));
  r.join("a-new", at(6));  // its replacement registers first and sorts first
  r.join("w2", at(6));
  r.join("w0", at(7));
  ASSERT_EQ(r.generation(), 2);
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"w0", "w2", "a-new"}));
}

// Note [Several ranks per pod]: pods of 2 ranks (pod = slot / 2 of "w<slot>").
PodOfWorker podsOfTwo() {
  return [](const std::string& id) -> std::optional<int> {
    if (id.size() < 2 || id[0] != 'w') return std::nullopt;
    return std::stoi(id.substr(1)) / 2;
  };
}

TEST(RendezvousTest, KeepPodsAdjacentGathersEachPodAtItsFirstMember) {
  const PodOfWorker pods = podsOfTwo();
  EXPECT_EQ(keepPodsAdjacent({"w2", "w0", "w3", "w1"}, pods), (std::vector<std::string>{"w2", "w3", "w0", "w1"}));
  EXPECT_EQ(keepPodsAdjacent({"w1", "x", "w5", "w0", "w4"}, pods),
            (std::vector<std::string>{"w0", "w1", "x", "w4", "w5"}));
  EXPECT_EQ(keepPodsAdjacent({"w3", "w11", "w10", "w2"}, pods),
            (std::vector<std::string>{"w2", "w3", "w10", "w11"}));  // natural order inside a pod
  EXPECT_EQ(keepPodsAdjacent({"w1", "w0"}, {}), (std::vector<std::string>{"w1", "w0"}));  // no pods
  EXPECT_TRUE(keepPodsAdjacent({}, pods).empty());
}

// Survivors first, newcomers after would split pods: an elastic round that closed at min with
// one rank of each pod, then the siblings joined. The next round keeps each pod's ranks adjacent.
TEST(RendezvousTest, APodsRanksAreAdjacentAfterSurvivorsAndNewcomersMeet) {
  RendezvousConfig c = cfg(2, 4, 10);
  c.podOf = podsOfTwo();
  Rendezvous r(c);
  r.join("w2", at(0));
  r.join("w0", at(0));
  ASSERT_TRUE(r.tick(at(11)));
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"w0", "w2"}));
  r.join("w3", at(12));  // late joiners: the siblings
  r.join("w1", at(12));
  r.endGeneration(at(13));
  r.join("w2", at(14));
  r.join("w0", at(14));
  ASSERT_EQ(r.generation(), 2);
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"w0", "w1", "w2", "w3"}));
  // Without pods the same sequence gives survivors first, newcomers after.
  Rendezvous plain(cfg(2, 4, 10));
  plain.join("w2", at(0));
  plain.join("w0", at(0));
  ASSERT_TRUE(plain.tick(at(11)));
  plain.join("w3", at(12));
  plain.join("w1", at(12));
  plain.endGeneration(at(13));
  plain.join("w2", at(14));
  plain.join("w0", at(14));
  EXPECT_EQ(plain.active()->members, (std::vector<std::string>{"w0", "w2", "w1", "w3"}));
}

TEST(RendezvousTest, StaleGenerationsAreFenced) {
  Rendezvous r(cfg(1, 1));
  EXPECT_FALSE(r.isCurrent(0));
  r.join("a", at(0));
  EXPECT_TRUE(r.isCurrent(1));
  r.endGeneration(at(1));
  EXPECT_FALSE(r.isCurrent(1));
  r.join("a", at(2));
  EXPECT_TRUE(r.isCurrent(2));
  EXPECT_FALSE(r.isCurrent(1));
  EXPECT_FALSE(r.isCurrent(3));
}

TEST(RendezvousTest, ExtraJoinersBeyondMaxWaitAndLateJoinersOpenTheNextRound) {
  Rendezvous r(cfg(1, 2, 0));
  r.join("a", at(0));
  r.join("b", at(0));
  r.join("c", at(0));
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.lateJoiners(), (std::vector<std::string>{"c"}));
  r.endGeneration(at(1));
  EXPECT_EQ(r.waiting(), (std::vector<std::string>{"c"}));
  EXPECT_TRUE(r.tick(at(1)));  // min 1 reached, last call 0
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"c"}));
  EXPECT_EQ(r.generation(), 2);
}

TEST(RendezvousTest, RestoredContinuesNumberingAndKnowsItsMembers) {
  RendezvousRound round;
  round.generation = 7;
  round.members = {"x", "y"};
  Rendezvous r = Rendezvous::restored(cfg(2, 2), round);
  EXPECT_TRUE(r.isCurrent(7));
  EXPECT_EQ(r.join("y", at(0)), 7);
  EXPECT_EQ(*r.active()->rankOf("y"), 1);
  r.endGeneration(at(1));
  r.join("x", at(2));
  r.join("y", at(2));
  EXPECT_EQ(r.generation(), 8);
}

TEST(RendezvousTest, ARoundOpensAtItsFirstJoinOrWhenTheGenerationEnded) {
  Rendezvous r(cfg(2, 2));
  r.join("a", at(3));
  r.leave("a", at(4));  // the round is empty again: it has not opened
  r.join("a", at(5));
  r.join("b", at(7.5));
  ASSERT_FALSE(r.open());
  EXPECT_EQ(r.active()->openedAt, at(5));
  EXPECT_EQ(r.active()->closedAt, at(7.5));
  r.join("c", at(8));  // a late joiner opens the next round when the generation ends
  r.endGeneration(at(10));
  r.join("a", at(12));
  ASSERT_FALSE(r.open());
  EXPECT_EQ(r.active()->openedAt, at(10));
  EXPECT_EQ(r.active()->closedAt, at(12));
}

TEST(RendezvousTest, ConfigValidation) {
  EXPECT_TRUE(cfg(1, 1).validate().isOk());
  EXPECT_FALSE(cfg(0, 1).validate().isOk());
  EXPECT_FALSE(cfg(3, 2).validate().isOk());
  EXPECT_FALSE(cfg(1, 1, -1).validate().isOk());
}

TEST(RendezvousTest, APlannedChangeClosesOnceEveryExpectedWorkerJoined) {
  // Note [Elastic membership]: generation 1 of 3 ends to take in a late joiner; the round closes
  // when the survivors and the joiner are back, below max and without waiting out the last call.
  Rendezvous r(cfg(2, 5, 30));
  for (const char* id : {"a", "b", "c"}) r.join(id, at(0));
  r.tick(at(30));
  ASSERT_EQ(r.active()->worldSize(), 3);
  r.join("d", at(31));
  r.endGeneration(at(32));
  r.expect({"d", "a", "b", "c"}, at(32));
  r.join("a", at(32.1));
  r.join("c", at(32.2));
  EXPECT_TRUE(r.open());
  r.join("b", at(32.3));
  ASSERT_FALSE(r.open());
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(RendezvousTest, AnExpectedWorkerThatLeavesIsNoLongerWaitedForAndMissingOnesFallBackToTheLastCall) {
  Rendezvous r(cfg(2, 5, 10));
  r.expect({"a", "b", "c"}, at(0));
  r.join("a", at(1));
  r.join("b", at(2));
  EXPECT_TRUE(r.open());
  EXPECT_EQ(*r.nextDeadline(), at(12)) << "c is missing: the last call still applies";
  r.leave("c", at(3));
  ASSERT_FALSE(r.open()) << "every worker still expected joined";
  EXPECT_EQ(r.active()->worldSize(), 2);
  // Expectations end with the round: the next round waits for its last call again.
  r.endGeneration(at(4));
  r.join("a", at(5));
  r.join("b", at(5));
  EXPECT_TRUE(r.open());
}

TEST(RendezvousTest, AnExpectedSurvivorIsWaitedForBeyondTheLastCallUpToTheWait) {
  // A planned change expects a, b, c for up to 6 s; c is slow to tear down. The last call (2 s
  // after min joined) does not close the round while c is missing; c joining closes it.
  Rendezvous r(cfg(2, 5, 2));
  r.expect({"a", "b", "c"}, at(0), std::chrono::seconds(6));
  r.join("a", at(0.1));
  r.join("b", at(0.2));
  EXPECT_EQ(*r.nextDeadline(), at(6));
  EXPECT_FALSE(r.tick(at(3)));
  r.join("c", at(4));
  ASSERT_FALSE(r.open());
  EXPECT_EQ(r.active()->worldSize(), 3);
  // One that never comes: the round closes at the wait's end with the others.
  r.endGeneration(at(5));
  r.expect({"a", "b", "c"}, at(5), std::chrono::seconds(6));
  r.join("a", at(5.1));
  r.join("b", at(5.1));
  EXPECT_FALSE(r.tick(at(10.9)));
  EXPECT_TRUE(r.tick(at(11)));
  EXPECT_EQ(r.active()->worldSize(), 2);
}

TEST(RendezvousTest, ARecoveryWaitsForItsSurvivorsButDoesNotCloseBeforeTheLastCall) {
  // Note [Recovery]: after a verdict the survivors a, b, c are expected for up to 6 s without
  // closing early (the replacement d may come within the last call). c is slow to tear down: the
  // last call (2 s after min joined) waits for it; once it is in, the last call decides again.
  Rendezvous r(cfg(2, 5, 2));
  r.expect({"a", "b", "c"}, at(0), std::chrono::seconds(6), /*closeWhenAllJoined=*/false);
  r.join("a", at(0.1));
  r.join("b", at(0.2));
  EXPECT_EQ(*r.nextDeadline(), at(6));
  EXPECT_FALSE(r.tick(at(3)));
  r.join("c", at(4));
  EXPECT_TRUE(r.open()) << "every survivor joined, but a recovery does not close early";
  EXPECT_EQ(*r.nextDeadline(), at(2.2)) << "nothing missing: the last call from min";
  r.join("d", at(4.1));
  EXPECT_TRUE(r.tick(at(4.2)));
  EXPECT_EQ(r.active()->members, (std::vector<std::string>{"a", "b", "c", "d"}));
  // A survivor that never comes is waited for up to the wait, then left out.
  r.endGeneration(at(5));
  r.expect({"a", "b", "c"}, at(5), std::chrono::seconds(6), false);
  r.join("a", at(5.1));
  r.join("b", at(5.1));
  EXPECT_FALSE(r.tick(at(10.9)));
  EXPECT_TRUE(r.tick(at(11)));
  EXPECT_EQ(r.active()->worldSize(), 2);
}

TEST(RendezvousTest, ExpectingWorkersBelowMinDoesNotCloseTheRound) {
  Rendezvous r(cfg(3, 5, 10));
  r.expect({"a", "b"}, at(0));
  r.join("a", at(1));
  r.join("b", at(1));
  EXPECT_TRUE(r.open());
}

}  // namespace
}  // namespace ddp::controller
