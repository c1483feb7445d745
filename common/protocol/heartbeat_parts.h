#pragma once
// The parts of a heartbeat both sides name alike (docs/API.md, "Heartbeats"): a backend's
// collectives in flight, one op of a flight record, the last checkpoint written. The Heartbeat
// (heartbeat.h) holds them, and their JSON codec is below: heartbeat_codec.cc writes and reads
// them through it (strictly or tolerantly, as the JsonFields it passes says), and the flight
// records the controller keeps reuse the types.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol/json_fields.h"

namespace ddp::protocol {

// One backend's view in a heartbeat: the last collective issued and the oldest unfinished one.
struct CollectiveView {
  std::string backend;
  int64_t issued = -1;  // sequence number of the last collective issued (-1: none yet)
  int64_t seq = -1;     // oldest unfinished (-1: none; then op, seconds and bytes are empty)
  std::string op;
  double seconds = 0;   // its age when the heartbeat was sent
  int64_t bytes = 0;
  bool operator==(const CollectiveView&) const = default;
};

// One op of a rank's flight record (comm::FlightRecorder), sent in answer to the `flightRecord`
// command; ages are relative to the heartbeat's sending (no clock is shared).
struct FlightOp {
  std::string backend;
  int64_t seq = 0;
  std::string op;
  int64_t bytes = 0;
  std::string state;              // comm::flightStateName(): queued | running | completed | failed | ...
  double issuedSecondsAgo = 0;
  double startedSecondsAgo = -1;  // -1: not started
  double endedSecondsAgo = -1;    // -1: not ended
  bool unfinished() const { return state == "queued" || state == "running"; }
  bool operator==(const FlightOp&) const = default;
};

// The last checkpoint this worker wrote.
struct HeartbeatCheckpoint {
  int64_t step = 0;
  int64_t bytes = 0;
  std::string path;
  bool operator==(const HeartbeatCheckpoint&) const = default;
};

// ---- Their JSON (fields of a heartbeat object) ----

Json collectivesJson(const std::vector<CollectiveView>& views);
Json flightRecordJson(const std::vector<FlightOp>& ops);
Json checkpointJson(const std::optional<HeartbeatCheckpoint>& checkpoint);  // null when none
// Each reads its field of the heartbeat `f` (absent or of another kind: nothing). A strict
// reader requires what the worker always writes (backend, seq, op; a flight op's state; a
// checkpoint's step); a tolerant one requires nothing. InvalidArgument names the field.
Status decodeCollectives(const JsonFields& f, std::vector<CollectiveView>* out);
Status decodeFlightRecord(const JsonFields& f, std::vector<FlightOp>* out);
Status decodeCheckpoint(const JsonFields& f, std::optional<HeartbeatCheckpoint>* out);

}  // namespace ddp::protocol
