// summarizeFlightRecords: the line `ddpctl describe` prints for a hang, from the ranks' flight
// records and the blamed rank's last heartbeat (pure: no processes).
#include "controller/jobs/hang/flight_records.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

FlightOp op(int64_t seq, const std::string& state, double ago, int64_t bytes = 4200000) {
  FlightOp o;
  o.backend = "gloo";
  o.seq = seq;
  o.op = "allreduce";
  o.bytes = bytes;
  o.state = state;
  o.issuedSecondsAgo = ago;
  return o;
}

RankFlightRecord waitingRank(int rank, double waited) {
  RankFlightRecord r;
  r.rank = rank;
  r.status = "received";
  r.ops = {op(810, "completed", 7), op(811, "completed", 6.5), op(812, "running", waited), op(813, "queued", 0.1)};
  return r;
}

TEST(FlightRecordsTest, NamesTheRankThatNeverReachedTheOpAndTheRanksWaitingInIt) {
  FlightRecordEvent e;
  e.ranks = {waitingRank(0, 6.1), {}, waitingRank(2, 5.9), waitingRank(3, 6.0)};
  e.ranks[1].rank = 1;
  e.ranks[1].culprit = true;
  e.ranks[1].status = "unavailable: blamed";
  e.ranks[1].lastHeartbeat = {CollectiveView{"gloo", 811, -1, "", 0}};
  EXPECT_EQ(summarizeFlightRecords(e), "rank 1 never reached allreduce #812 (4.2 MB); ranks 0, 2, 3 waiting in it for 6.1 s");
}

TEST(FlightRecordsTest, WithoutARankBehindOnlyTheWaitersAreNamed) {
  FlightRecordEvent e;
  e.ranks = {waitingRank(0, 2.25), waitingRank(1, 2.0)};
  EXPECT_EQ(summarizeFlightRecords(e), "ranks 0, 1 waiting in allreduce #812 (4.2 MB) for 2.2 s");
}

TEST(FlightRecordsTest, NoRecordsOrNothingInFlightIsSaid) {
  FlightRecordEvent none;
  none.ranks.resize(2);
  none.ranks[0].status = "requested";
  EXPECT_EQ(summarizeFlightRecords(none), "no rank's flight record arrived");
  FlightRecordEvent idle;
  idle.ranks.resize(1);
  idle.ranks[0].status = "received";
  idle.ranks[0].ops = {op(5, "completed", 1)};
  EXPECT_EQ(summarizeFlightRecords(idle), "no rank was inside a collective (1 record(s))");
}

TEST(FlightRecordsTest, BytesInDecimalUnits) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(12000), "12.0 kB");
  EXPECT_EQ(formatBytes(4200000), "4.2 MB");
  EXPECT_EQ(formatBytes(3500000000), "3.5 GB");
}

}  // namespace
}  // namespace ddp::controller
