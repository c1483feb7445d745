// FlightRecorder: a ring of the last N ops with states and times (FakeClock; faked: time).
#include "worker/comm/flight_recorder.h"

#include <gtest/gtest.h>

namespace ddp::comm {
namespace {

TEST(FlightRecorderTest, KeepsTheLastNOpsInOrder) {
  FakeClock clock;
  FlightRecorder fr(4, clock);
  for (uint64_t s = 1; s <= 6; ++s) {
    fr.recordIssued(s, s % 2 ? "allreduce" : "broadcast", s * 100);
    clock.advance(1ms);
  }
  auto recs = fr.snapshot();
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs.front().seq, 3u);
  EXPECT_EQ(recs.back().seq, 6u);
  EXPECT_EQ(recs.back().op, "broadcast");
  EXPECT_EQ(recs.back().bytes, 600u);
  EXPECT_EQ(recs.back().state, FlightState::kQueued);
  fr.recordStarted(1);  // left the ring: ignored
  fr.recordEnded(1, FlightState::kCompleted);
  EXPECT_EQ(fr.snapshot().front().seq, 3u);
}

TEST(FlightRecorderTest, StatesTimesAndFirstTerminalStateWins) {
  FakeClock clock;
  FlightRecorder fr(8, clock);
  fr.recordIssued(1, "allreduce", 4096);
  clock.advance(2ms);
  fr.recordStarted(1);
  clock.advance(5ms);
  fr.recordEnded(1, FlightState::kTimedOut, "watchdog");
  fr.recordEnded(1, FlightState::kAborted, "later");  // ignored
  fr.recordIssued(2, "barrier", 0);
  auto recs = fr.snapshot();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].state, FlightState::kTimedOut);
  EXPECT_EQ(recs[0].detail, "watchdog");
  EXPECT_EQ(recs[0].started - recs[0].issued, 2ms);
  EXPECT_EQ(recs[0].ended - recs[0].started, 5ms);
  const std::string dump = fr.dump("g");
  EXPECT_NE(dump.find("flight record of group g (last 2 ops)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("seq 1 allreduce 4096 bytes state=timed_out"), std::string::npos) << dump;
  EXPECT_NE(dump.find("seq 2 barrier 0 bytes state=queued"), std::string::npos) << dump;
  EXPECT_NE(dump.find("(watchdog)"), std::string::npos) << dump;
}

}  // namespace
}  // namespace ddp::comm
