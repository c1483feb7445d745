// The hang detector (pure, injected time): every verdict of Note [Hang verdicts], its order,
// the ranks it blames and the message it gives.
#include "controller/jobs/hang/hang_detector.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

HangConfig config() {
  HangConfig c;
  c.heartbeatWindow = std::chrono::seconds(3);
  c.hang = std::chrono::seconds(5);
  c.progress = std::chrono::seconds(20);
  c.settle = std::chrono::seconds(1);
  return c;
}

// `n` healthy members at `now`: heartbeat just now, stepping, nothing unfinished.
std::vector<MemberHealth> healthy(int n, double now) {
  std::vector<MemberHealth> out;
  for (int r = 0; r < n; ++r) {
    MemberHealth m;
    m.rank = r;
    m.workerId = "job-w" + std::to_string(r);
    m.lastHeartbeat = at(now);
    m.step = 10;
    m.stepChangedAt = at(now);
    m.collectives = {{"gloo", 41, -1, "", 0}};
    out.push_back(m);
  }
  return out;
}

TEST(HangDetectorTest, HealthyMembersGiveNoVerdict) {
  auto r = detectHang(healthy(4, 100), config(), at(0), at(100.5));
  EXPECT_FALSE(r.verdict.has_value());
  EXPECT_TRUE(r.stragglers.empty());
}

TEST(HangDetectorTest, ExitedBlamesTheEarliestFailedExit) {
  auto m = healthy(3, 100);
  m[2].exitedWithFailure = true;
  m[2].exitedAt = at(99);
  m[2].exitMessage = "worker rank 2 killed by signal 9";
  m[1].exitedWithFailure = true;
  m[1].exitedAt = at(99.5);
  auto r = detectHang(m, config(), at(0), at(100));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kExited);
  EXPECT_EQ(r.verdict->culprits, std::vector<int>{2});
  EXPECT_EQ(r.verdict->message, "worker rank 2 killed by signal 9");
}

TEST(HangDetectorTest, UnresponsiveAfterTheHeartbeatWindowNamesTheRank) {
  auto m = healthy(3, 100);
  m[1].lastHeartbeat = at(97.5);
  EXPECT_FALSE(detectHang(m, config(), at(0), at(100)).verdict) << "2.5 s of silence is within the 3 s window";
  // Its peers wait in a collective it never reached: still Unresponsive, the silent rank is
  // named, not the waiting ones (the window is shorter than hangSeconds).
  m[0].collectives = {{"gloo", 42, 42, "allreduce", 4.0}};
  m[2].collectives = {{"gloo", 42, 42, "allreduce", 4.0}};
  auto r = detectHang(m, config(), at(0), at(100.6));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kUnresponsive);
  EXPECT_EQ(r.verdict->culprits, std::vector<int>{1});
  EXPECT_NE(r.verdict->message.find("worker rank 1 (job-w1) sent no heartbeat for 3.1 s"), std::string::npos)
      << r.verdict->message;
}

TEST(HangDetectorTest, CollectiveStuckBlamesTheRanksThatNeverReachedIt) {
  auto m = healthy(4, 100);
  for (int r : {0, 1, 3}) m[static_cast<size_t>(r)].collectives = {{"gloo", 42, 42, "allreduce", 3.0}};
  m[2].collectives = {{"gloo", 41, -1, "", 0}};  // heartbeating, but stuck before issuing #42
  EXPECT_FALSE(detectHang(m, config(), at(0), at(101)).verdict) << "4 s old: below hangSeconds";
  auto r = detectHang(m, config(), at(0), at(102.5));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kCollectiveStuck);
  EXPECT_EQ(r.verdict->culprits, std::vector<int>{2});
  EXPECT_EQ(r.verdict->waiting, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(r.verdict->message,
            "rank 2 never reached allreduce #42 (gloo), which ranks 0, 1 and 3 have waited in for 5.5 s");
}

TEST(HangDetectorTest, StragglerEventBeforeTheHangThreshold) {
  auto m = healthy(2, 100);
  m[0].collectives = {{"gloo", 42, 42, "allreduce", 3.0}};
  auto r = detectHang(m, config(), at(0), at(100));
  EXPECT_FALSE(r.verdict);
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 1);
  EXPECT_EQ(r.stragglers[0].seq, 42);
  m[0].collectives = {{"gloo", 42, 42, "allreduce", 2.0}};
  EXPECT_TRUE(detectHang(m, config(), at(0), at(100)).stragglers.empty()) << "2 s: below half of hangSeconds";
}

TEST(HangDetectorTest, EveryRankReachedTheStuckCollective) {
  auto m = healthy(2, 100);
  m[0].collectives = {{"gloo", 42, 42, "allreduce", 6.0}};
  m[1].collectives = {{"gloo", 43, 42, "allreduce", 6.0}};
  auto r = detectHang(m, config(), at(0), at(100));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kCollectiveStuck);
  EXPECT_TRUE(r.verdict->culprits.empty());
  EXPECT_EQ(r.verdict->waiting, (std::vector<int>{0, 1}));
}

TEST(HangDetectorTest, NoProgressCountsFromTheGenerationStart) {
  auto m = healthy(2, 105);  // heartbeating, but not stepping
  for (auto& x : m) x.stepChangedAt = at(10);
  EXPECT_FALSE(detectHang(m, config(), at(90), at(105)).verdict) << "the generation started 15 s ago";
  auto r = detectHang(m, config(), at(0), at(105));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kNoProgress);
  EXPECT_TRUE(r.verdict->culprits.empty()) << "every rank at the same step: nobody to single out";
  m[1].step = 9;
  r = detectHang(m, config(), at(0), at(105));
  EXPECT_EQ(r.verdict->culprits, std::vector<int>{1});
  m[0].stepChangedAt = at(100);
  EXPECT_FALSE(detectHang(m, config(), at(0), at(105)).verdict) << "one rank still steps";
}

TEST(HangDetectorTest, CollectiveFailedWaitsForAnExitThatExplainsIt) {
  auto m = healthy(2, 100);
  m[0].leftOnItsOwn = true;
  m[0].leftAt = at(100);
  m[0].leftMessage = "allreduce: connection reset by peer";
  EXPECT_FALSE(detectHang(m, config(), at(0), at(100.5)).verdict) << "within settle";
  m[1].exitedWithFailure = true;
  m[1].exitedAt = at(100.7);
  m[1].exitMessage = "worker rank 1 killed by signal 9";
  auto r = detectHang(m, config(), at(0), at(100.8));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kExited) << "the dead rank is blamed, not the one that noticed";
  EXPECT_EQ(r.verdict->culprits, std::vector<int>{1});
  m[1].exitedWithFailure = false;
  r = detectHang(m, config(), at(0), at(101.2));
  ASSERT_TRUE(r.verdict.has_value());
  EXPECT_EQ(r.verdict->reason, FaultReason::kCollectiveFailed);
  EXPECT_TRUE(r.verdict->culprits.empty());
  EXPECT_NE(r.verdict->message.find("connection reset by peer"), std::string::npos);
}

TEST(HangDetectorTest, FinishedMembersAreNotHung) {
  auto m = healthy(2, 100);
  m[1].finished = true;
  m[1].lastHeartbeat = at(50);
  m[1].stepChangedAt = at(50);
  EXPECT_FALSE(detectHang(m, config(), at(0), at(101)).verdict);
}

TEST(HangDetectorTest, ReasonNamesAreTheContract) {
  EXPECT_STREQ(faultReasonName(FaultReason::kExited), "Exited");
  EXPECT_STREQ(faultReasonName(FaultReason::kUnresponsive), "Unresponsive");
  EXPECT_STREQ(faultReasonName(FaultReason::kCollectiveStuck), "CollectiveStuck");
  EXPECT_STREQ(faultReasonName(FaultReason::kNoProgress), "NoProgress");
  EXPECT_STREQ(faultReasonName(FaultReason::kCollectiveFailed), "CollectiveFailed");
}

}  // namespace
}  // namespace ddp::controller
