#pragma once
// What the controller reads from a worker's heartbeat (docs/API.md, "Heartbeats"), and the
// command it answers with. Decoding is a pure function; unknown fields are ignored and `ext`
// is kept as raw JSON text so later figures need no wire change.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/launch/control_wire.h"
#include "common/status.h"
#include "controller/jobs/checkpoint_ledger.h"
#include "controller/jobs/flight_records.h"
#include "controller/jobs/hang_detector.h"

namespace ddp::controller {

struct HeartbeatCheckpoint {
  int64_t step = 0;
  int64_t bytes = 0;
  std::string path;
};

// The last shard report the worker delivered (a controller restarted since may have lost it:
// Note [Two-phase checkpoint commit]).
struct HeartbeatShard {
  int64_t generation = 0;
  int64_t step = 0;
  ShardReport report;
};

struct Heartbeat {
  std::string workerId;
  std::string incarnation;  // from the X-DDP-Incarnation header ("" unchecked; Note [Worker incarnations])
  int rank = -1;
  std::string state = "Running";  // wire::workerStateName(): Running | Succeeded | Failed | Stopped
  int64_t step = 0, totalSteps = 0, epoch = 0, epochs = 0;
  double loss = 0, samplesPerSecond = 0;
  std::optional<double> testAccuracy;
  // Language models only (absent from other workers' and older workers' heartbeats).
  std::optional<double> valLoss, tokensPerSecond, mfu;
  std::map<std::string, double> counters;  // samples, steps, stepSeconds, commBytes, ...
  std::optional<HeartbeatCheckpoint> checkpoint;
  std::optional<HeartbeatShard> lastShard;
  std::vector<CollectiveView> collectives;  // per backend: last issued, oldest unfinished
  std::vector<FlightOp> flightRecord;       // sent in answer to the `flightRecord` command
  std::string message;
  std::string extJson = "{}";
  std::map<std::string, double> ext;  // its numeric fields (e.g. "abortUnreliable")
  bool final() const { return state != "Running"; }
};

// The protocol's vocabulary, shared with the worker (common/launch/control_wire.h).
using wire::CommandType;
using wire::commandTypeName;

struct Command {
  CommandType type = CommandType::kNone;
  int64_t step = 0;  // kCheckpoint
};

// InvalidArgument naming the field on a malformed body.
Result<Heartbeat> parseHeartbeat(const std::string& json);
std::string commandJson(const Command& c, int64_t generation);

}  // namespace ddp::controller
