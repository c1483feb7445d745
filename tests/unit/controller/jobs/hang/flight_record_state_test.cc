// FlightRecordState (controller/jobs/hang/flight_record_state.h): each asked member is asked
// once, its answer lands in the newest event, a later generation ends the asking, and the wait
// ends at the deadline (Note [Flight records before the replacement]).
#include "controller/jobs/hang/flight_record_state.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

FlightRecordEvent verdict(int64_t g, int64_t timeMs) {
  FlightRecordEvent e;
  e.timeMs = timeMs;
  e.generation = g;
  for (int r = 0; r < 2; ++r) e.ranks.push_back({r, "w" + std::to_string(r), r == 1, "requested", {}, {}, 0});
  return e;
}

FlightOp op(int64_t seq) {
  FlightOp o;
  o.backend = "gloo";
  o.seq = seq;
  o.op = "allreduce";
  o.state = "running";
  return o;
}

TEST(FlightRecordStateTest, AMemberIsAskedOnceAndItsAnswerIsKept) {
  FlightRecordState s;
  EXPECT_EQ(s.onHeartbeat(1, "w0", {}, 0), FlightAnswer::kNone) << "nothing asked";
  s.open(verdict(1, 1000), {"w0"}, at(5));
  EXPECT_TRUE(s.awaiting(at(1)));
  EXPECT_EQ(s.onHeartbeat(1, "w1", {}, 0), FlightAnswer::kNone) << "the culprit is not asked";
  EXPECT_EQ(s.onHeartbeat(1, "w0", {}, 0), FlightAnswer::kAsk);
  EXPECT_EQ(s.onHeartbeat(1, "w0", {op(812)}, 2000), FlightAnswer::kReceived);
  const RankFlightRecord& r = s.events.back().ranks[0];
  EXPECT_EQ(r.status, "received");
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].seq, 812);
  EXPECT_EQ(r.receivedMs, 2000);
  EXPECT_FALSE(s.awaiting(at(1))) << "every asked member answered";
  EXPECT_EQ(s.onHeartbeat(1, "w0", {}, 0), FlightAnswer::kNone) << "asked once";
}

TEST(FlightRecordStateTest, AnEmptyAnswerSaysSo) {
  FlightRecordState s;
  s.open(verdict(1, 1000), {"w0"}, at(5));
  ASSERT_EQ(s.onHeartbeat(1, "w0", {}, 0), FlightAnswer::kAsk);
  EXPECT_EQ(s.onHeartbeat(1, "w0", {}, 0), FlightAnswer::kReceived);
  EXPECT_EQ(s.events.back().ranks[0].status, "unavailable: it sent no record");
}

TEST(FlightRecordStateTest, ALaterGenerationOrTheDeadlineEndsTheWait) {
  FlightRecordState s;
  s.open(verdict(1, 1000), {"w0"}, at(5));
  EXPECT_TRUE(s.awaiting(at(4.9)));
  EXPECT_FALSE(s.awaiting(at(5))) << "the deadline";
  EXPECT_EQ(s.onHeartbeat(2, "w0", {}, 0), FlightAnswer::kNone);
  EXPECT_TRUE(s.wanted.empty() && s.asked.empty()) << "the verdict's generation is gone";
}

TEST(FlightRecordStateTest, ARejoiningMemberIsForgottenAndEventsAreCapped) {
  FlightRecordState s;
  s.open(verdict(1, 1000), {"w0"}, at(5));
  s.forget("w0");
  EXPECT_FALSE(s.awaiting(at(1)));
  for (size_t i = 0; i < kFlightRecordEventsPerJob + 2; ++i) s.open(verdict(2, 2000 + static_cast<int64_t>(i)), {}, at(5));
  EXPECT_EQ(s.events.size(), kFlightRecordEventsPerJob);
  EXPECT_EQ(s.events.back().timeMs, 2000 + static_cast<int64_t>(kFlightRecordEventsPerJob) + 1) << "newest last";
}

}  // namespace
}  // namespace ddp::controller
