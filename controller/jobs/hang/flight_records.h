#pragma once
// Flight records of a hang (docs/RECOVERY.md, "Flight records"): when the controller declares
// a hang it asks each live rank of the generation for its flight record (the `flightRecord`
// heartbeat command; the rank's next heartbeat carries the last N collective ops of its
// FlightRecorder) and keeps them with the verdict. A blamed rank is replaced at once, so its
// view is its last heartbeat's (the last collective it issued). summarizeFlightRecords() turns
// them into the line `ddpctl describe` prints: "rank 1 never reached allreduce #812 (4.2 MB);
// ranks 0, 2, 3 waiting in it for 6.1 s".
//
// Note [Flight records before the replacement]
// A blamed rank's process is replaced only once every asked rank answered, or after a bounded
// wait (two heartbeat periods, 1 to 5 s): killing the culprit first would end the collective the
// others wait in (their Gloo pairs see the peer's sockets close), and their records would then
// show it failed instead of stuck. Meanwhile a blamed rank's heartbeats of the ended generation
// are answered `none`, not 410: a fenced worker stops training, and a rank stalled before a
// step would then wake, join the step's collective with its stop flag and let the others stop
// with it instead of recovering. A survivor waiting in a collective beats every 200 ms, so the
// wait is normally a few hundred milliseconds. Only hang verdicts (Unresponsive,
// CollectiveStuck, NoProgress) ask for records: after Exited or CollectiveFailed the peers'
// collectives have failed already, and a member that registers again (it left the generation on
// its own) is no longer waited for.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/protocol/heartbeat_parts.h"
#include "common/status.h"
#include "controller/jobs/hang/hang_detector.h"
#include "controller/store/job_store.h"

namespace ddp::controller {

// One op of a rank's flight record, as the worker sent it (common/protocol/heartbeat_parts.h).
using protocol::FlightOp;

// What the controller knows of one rank at a hang.
struct RankFlightRecord {
  int rank = 0;
  std::string workerId;
  bool culprit = false;
  // "received" (ops hold its record), "requested" (asked, no answer yet), or "unavailable: why".
  std::string status;
  std::vector<CollectiveView> lastHeartbeat;  // its last heartbeat's collectives
  std::vector<FlightOp> ops;                  // oldest first
  int64_t receivedMs = 0;                     // wall time the record arrived
};

struct FlightRecordEvent {
  int64_t timeMs = 0;     // the verdict
  std::string reason;     // Exited, Unresponsive, CollectiveStuck, NoProgress, CollectiveFailed
  std::string message;    // the verdict's
  int64_t generation = 0;
  std::vector<RankFlightRecord> ranks;  // by rank
};

// Kept per job (the newest last).
inline constexpr size_t kFlightRecordEventsPerJob = kMaxFlightRecordsPerJob;

// "rank 1 never reached allreduce #812 (4.2 MB); ranks 0, 2, 3 waiting in it for 6.1 s", or
// what can be said without records.
std::string summarizeFlightRecords(const FlightRecordEvent& event);

// "4.2 MB", "512 B", "12.0 kB" (decimal units).
std::string formatBytes(int64_t bytes);

// The job store's form of an event (flight_record_codec.cc): JSON with every field; decode
// fails with DataLoss naming what is wrong. Kept with the verdict's event, so a restarted
// controller still answers GET /v1/jobs/{name}/flightrecords.
std::string encodeFlightRecordEvent(const FlightRecordEvent& event);
Result<FlightRecordEvent> decodeFlightRecordEvent(const std::string& text);

// The sequence number of the last collective a heartbeat's view shows completed (everything
// before its oldest unfinished op; the last issued one when nothing is unfinished); -1: none.
int64_t lastCompletedSeq(const CollectiveView& view);

}  // namespace ddp::controller
