// The two-phase checkpoint commit's decisions (Note [Two-phase checkpoint commit]), pure, with
// injected time: commit only when every rank of the generation reported success; abandon on a
// failed shard, an ended generation, a timeout or a lost rank-0 report; decisions never change.
#include "controller/jobs/checkpoints/checkpoint_ledger.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

ShardReport ok(int rank, uint64_t bytes = 100, uint32_t crc = 7) {
  ShardReport r;
  r.rank = rank;
  r.ok = true;
  r.bytes = bytes + static_cast<uint64_t>(rank);
  r.crc = crc + static_cast<uint32_t>(rank);
  return r;
}

ShardReport failed(int rank, std::string why) {
  ShardReport r;
  r.rank = rank;
  r.error = std::move(why);
  return r;
}

LedgerConfig config() {
  LedgerConfig c;
  c.commitTimeout = std::chrono::seconds(10);
  c.forgetAfter = std::chrono::seconds(60);
  return c;
}

TEST(CheckpointLedgerTest, CommitsOnlyWhenEveryRankReportedAndCarriesTheirChecksums) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  for (int r : {2, 0}) {
    EXPECT_EQ(l.report(1, 40, 3, ok(r), at(1), &changes, &problem).decision, CommitDecision::kPending);
  }
  EXPECT_EQ(l.decision(1, 40, at(1.5), &changes).decision, CommitDecision::kPending);
  EXPECT_TRUE(changes.empty());
  auto v = l.report(1, 40, 3, ok(1), at(2), &changes, &problem);
  ASSERT_EQ(v.decision, CommitDecision::kCommit);
  ASSERT_EQ(v.shards.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(v.shards[r].rank, r);
    EXPECT_EQ(v.shards[r].bytes, 100u + r);
    EXPECT_EQ(v.shards[r].crc, 7u + r);
  }
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].step, 40);
  EXPECT_EQ(changes[0].verdict.decision, CommitDecision::kCommit);
  EXPECT_EQ(l.decision(1, 40, at(3), &changes).decision, CommitDecision::kCommit);
  EXPECT_TRUE(problem.empty());
}

TEST(CheckpointLedgerTest, OneFailedShardAbandonsTheCheckpointAndNamesTheRank) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(1, 10, 2, ok(0), at(1), &changes, &problem);
  auto v = l.report(1, 10, 2, failed(1, "Read-only file system"), at(1.1), &changes, &problem);
  EXPECT_EQ(v.decision, CommitDecision::kAbandon);
  EXPECT_NE(v.reason.find("rank 1 could not write its shard: Read-only file system"), std::string::npos) << v.reason;
  // Never committed afterwards, whatever arrives.
  l.report(1, 10, 2, ok(1), at(1.2), &changes, &problem);
  EXPECT_EQ(l.decision(1, 10, at(2), &changes).decision, CommitDecision::kAbandon);
  ASSERT_EQ(changes.size(), 1u);
  // The next checkpoint of the same generation is unaffected.
  l.report(1, 20, 2, ok(0), at(3), &changes, &problem);
  EXPECT_EQ(l.report(1, 20, 2, ok(1), at(3), &changes, &problem).decision, CommitDecision::kCommit);
}

TEST(CheckpointLedgerTest, RepeatedReportIsIdempotentAndAConflictingOneIsAProblem) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(1, 10, 2, ok(0), at(1), &changes, &problem);
  l.report(1, 10, 2, ok(0), at(1), &changes, &problem);
  EXPECT_TRUE(problem.empty());
  EXPECT_EQ(l.decision(1, 10, at(1), &changes).decision, CommitDecision::kPending);
  l.report(1, 10, 2, ok(0, 999), at(1), &changes, &problem);
  EXPECT_NE(problem.find("twice, differently"), std::string::npos) << problem;
  problem.clear();
  l.report(1, 10, 2, ok(5), at(1), &changes, &problem);
  EXPECT_NE(problem.find("rank 5 is not in generation 1 of 2"), std::string::npos) << problem;
  EXPECT_EQ(l.decision(1, 10, at(1), &changes).decision, CommitDecision::kPending);
}

TEST(CheckpointLedgerTest, EndedGenerationAbandonsItsPendingCheckpointsButNotDecidedOnes) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(1, 10, 2, ok(0), at(1), &changes, &problem);
  l.report(1, 10, 2, ok(1), at(1), &changes, &problem);  // committed
  l.report(1, 20, 2, ok(0), at(2), &changes, &problem);  // pending
  l.report(2, 30, 2, ok(0), at(2), &changes, &problem);  // a later generation: untouched
  changes.clear();
  l.endGeneration(1, "verdict Unresponsive", at(3), &changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].step, 20);
  EXPECT_EQ(l.decision(1, 10, at(3), &changes).decision, CommitDecision::kCommit);
  auto v = l.decision(1, 20, at(3), &changes);
  EXPECT_EQ(v.decision, CommitDecision::kAbandon);
  EXPECT_NE(v.reason.find("generation 1 ended: verdict Unresponsive"), std::string::npos) << v.reason;
  EXPECT_EQ(l.decision(2, 30, at(3), &changes).decision, CommitDecision::kPending);
}

TEST(CheckpointLedgerTest, MissingReportsTimeOutNamingTheRanks) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(1, 10, 4, ok(0), at(1), &changes, &problem);
  l.report(1, 10, 4, ok(2), at(2), &changes, &problem);
  l.expire(at(10.9), &changes);
  EXPECT_TRUE(changes.empty());
  l.expire(at(11), &changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].verdict.decision, CommitDecision::kAbandon);
  EXPECT_NE(changes[0].verdict.reason.find("rank(s) 1, 3 did not report within 10 s"), std::string::npos)
      << changes[0].verdict.reason;
  // Decided entries are forgotten after forgetAfter.
  EXPECT_EQ(l.size(), 1u);
  l.expire(at(70.9), &changes);
  EXPECT_EQ(l.size(), 1u);
  l.expire(at(71), &changes);
  EXPECT_EQ(l.size(), 0u);
}

TEST(CheckpointLedgerTest, AskingWithoutRankZerosReportAbandons) {
  // A restarted controller lost phase 1: rank 0 (which reports before it asks) is told to
  // abandon, at once, even when other ranks' reports reach the new controller.
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  auto none = l.decision(3, 50, at(1), &changes);
  EXPECT_EQ(none.decision, CommitDecision::kAbandon);
  EXPECT_NE(none.reason.find("restarted"), std::string::npos) << none.reason;
  l.report(3, 60, 2, ok(1), at(2), &changes, &problem);
  EXPECT_EQ(l.decision(3, 60, at(2), &changes).decision, CommitDecision::kAbandon);
  // Rank 0's late report cannot turn it into a commit.
  EXPECT_EQ(l.report(3, 60, 2, ok(0), at(3), &changes, &problem).decision, CommitDecision::kAbandon);
  EXPECT_EQ(l.report(3, 50, 1, ok(0), at(3), &changes, &problem).decision, CommitDecision::kAbandon);
}

// A controller restart lost rank 1's report of step 40 (it reached the old controller); the
// new one holds only rank 0's. Rank 1's report of step 60 proves the one of 40 will never come:
// 40 is abandoned at once (rank 0, waiting for it before its next checkpoint, goes on) and 60
// commits; another generation's checkpoints are not touched.
TEST(CheckpointLedgerTest, ALaterReportOfARankAbandonsTheStepItNeverReported) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(3, 40, 2, ok(0), at(0), &changes, &problem);
  l.report(2, 20, 2, ok(0), at(0), &changes, &problem);  // an older generation's: left alone
  EXPECT_EQ(l.decision(3, 40, at(0.1), &changes).decision, CommitDecision::kPending);
  ASSERT_TRUE(changes.empty());
  l.report(3, 60, 2, ok(1), at(1), &changes, &problem);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].step, 40);
  EXPECT_EQ(changes[0].verdict.decision, CommitDecision::kAbandon);
  EXPECT_EQ(changes[0].verdict.reason,
            "rank 1 reported step 60 but never step 40 (its report was lost: the controller restarted during the "
            "checkpoint)");
  EXPECT_EQ(l.decision(3, 40, at(1.1), &changes).decision, CommitDecision::kAbandon);
  EXPECT_EQ(l.report(3, 60, 2, ok(0), at(1.2), &changes, &problem).decision, CommitDecision::kCommit);
  EXPECT_EQ(l.decision(2, 20, at(1.3), &changes).decision, CommitDecision::kPending);
  EXPECT_TRUE(problem.empty()) << problem;
}

// The same when rank 1's later report arrives first (rank 0's shard of 40 was written late): the
// entry rank 0's report of 40 creates is abandoned at once.
TEST(CheckpointLedgerTest, AReportOfAStepARankAlreadyPassedIsAbandonedAtOnce) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(3, 60, 2, ok(1), at(0), &changes, &problem);
  EXPECT_EQ(l.report(3, 40, 2, ok(0), at(1), &changes, &problem).decision, CommitDecision::kAbandon);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].verdict.reason.find("rank 1 reported step 60 but never step 40"), std::string::npos);
  EXPECT_EQ(l.report(3, 60, 2, ok(0), at(1.2), &changes, &problem).decision, CommitDecision::kCommit);
  // A new generation starts afresh.
  l.endGeneration(3, "verdict", at(2), &changes);
  l.report(4, 20, 2, ok(0), at(3), &changes, &problem);
  EXPECT_EQ(l.decision(4, 20, at(3.1), &changes).decision, CommitDecision::kPending);
}

// After a restart rank 1's reports of 40 and 60 both went to the old controller; rank 1 waits
// in a collective for rank 0 (which waits for 40's decision), so its heartbeat's repeat of its
// last report (60) is all the new controller hears: 40 is abandoned, and 60 commits once rank 0
// reports it. A decided checkpoint is never reopened by a repeat.
TEST(CheckpointLedgerTest, AHeartbeatsRepeatOfTheLastReportIsRelearnedOnce) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  l.report(5, 40, 2, ok(0), at(0), &changes, &problem);
  l.relearn(5, 60, 2, ok(1), at(1), &changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].step, 40);
  EXPECT_EQ(changes[0].verdict.decision, CommitDecision::kAbandon);
  l.relearn(5, 60, 2, ok(1), at(2), &changes);  // the next heartbeat: nothing new
  EXPECT_EQ(changes.size(), 1u);
  EXPECT_EQ(l.report(5, 60, 2, ok(0), at(3), &changes, &problem).decision, CommitDecision::kCommit);
  EXPECT_TRUE(problem.empty()) << problem;
  // Long after, the entries are forgotten; a repeat of 60 opens nothing again.
  l.expire(at(1000), &changes);
  EXPECT_EQ(l.size(), 0u);
  l.relearn(5, 60, 2, ok(1), at(1001), &changes);
  EXPECT_EQ(l.size(), 0u);
}

TEST(CheckpointLedgerTest, WorldOfOneCommitsOnItsOwnReport) {
  CheckpointLedger l(config());
  std::vector<LedgerChange> changes;
  std::string problem;
  EXPECT_EQ(l.report(1, 5, 1, ok(0), at(0), &changes, &problem).decision, CommitDecision::kCommit);
}

}  // namespace
}  // namespace ddp::controller
