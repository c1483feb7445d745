// CheckpointState (controller/jobs/checkpoints/checkpoint_state.h): Note [Checkpoints failing]'s rule
// (out-of-order reports), the committed step and on-demand requests, and the ledger's timeouts.
#include "controller/jobs/checkpoints/checkpoint_state.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TEST(CheckpointStateTest, ACommitWithoutAnEarlierFailureShowsNoCondition) {
  CheckpointState s;
  EXPECT_EQ(s.noteOutcome(100, true, /*conditionShown=*/false), std::nullopt);
  EXPECT_EQ(s.failuresInARow, 0);
}

TEST(CheckpointStateTest, FailuresCountInARowAndALaterCommitClearsThem) {
  CheckpointState s;
  EXPECT_EQ(s.noteOutcome(100, false, false), 1);
  EXPECT_EQ(s.noteOutcome(200, false, true), 2);
  EXPECT_EQ(s.noteOutcome(150, true, true), std::nullopt) << "an earlier step's commit arrived late";
  EXPECT_EQ(s.failuresInARow, 2);
  EXPECT_EQ(s.noteOutcome(300, true, true), 0);
  EXPECT_EQ(s.lastFailedStep, 200);
}

TEST(CheckpointStateTest, TheCommittedStepOnlyGrows) {
  CheckpointState s;
  EXPECT_EQ(s.lastStep, -1);
  s.noteCommitted(120);
  s.noteCommitted(100);
  EXPECT_EQ(s.lastStep, 120);
}

TEST(CheckpointStateTest, RequestsAreNumberedWithRankZerosStep) {
  CheckpointState s;
  EXPECT_EQ(s.request(40), 1);
  EXPECT_EQ(s.request(55), 2);
  EXPECT_EQ(s.requestStep, 55);
}

TEST(CheckpointStateTest, TheLedgerIsMadeOnceFromTheCollectiveTimeout) {
  CheckpointState s;
  TimeoutsSpec t;
  t.collectiveSeconds = 45;
  CheckpointLedger& a = s.ledgerFor(t, std::chrono::seconds(60));
  t.collectiveSeconds = 1;
  EXPECT_EQ(&s.ledgerFor(t, std::chrono::seconds(60)), &a) << "made on first use, then kept";
  // commitTimeout 45 s: a step reported by one rank of two is not decided after 44 s, abandoned
  // after 46 s.
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  ShardReport r;
  r.rank = 0;
  r.ok = true;
  std::vector<LedgerChange> changes;
  std::string problem;
  a.report(1, 10, 2, r, t0, &changes, &problem);
  ASSERT_TRUE(problem.empty()) << problem;
  changes.clear();
  a.expire(t0 + std::chrono::seconds(44), &changes);
  EXPECT_TRUE(changes.empty());
  a.expire(t0 + std::chrono::seconds(46), &changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].verdict.decision, CommitDecision::kAbandon);
}

}  // namespace
}  // namespace ddp::controller
