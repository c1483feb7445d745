#pragma once
// The messages of the worker <-> controller protocol as the controller reads them (docs/API.md,
// "Heartbeats"): a heartbeat and the shard report it repeats; the parts both sides name alike
// (collectives, flight record, checkpoint) are in heartbeat_parts.h. The worker's side of the
// same messages is worker_messages.h; the controller's
// decoder is controller_codec.h, and tests/unit/protocol/ checks that what one side writes the
// other reads. The controller's view differs where it has always read more loosely: every field
// but the worker id may be absent (an older worker sends fewer), `counters` keeps whatever
// numbers it carries, and `ext` is kept as raw JSON text so later figures need no wire change.
// Thread model: plain values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol/heartbeat_parts.h"
#include "common/protocol/vocabulary.h"

namespace ddp::protocol {

// One rank's phase-1 report of the two-phase checkpoint commit (Note [Two-phase checkpoint
// commit] in controller/jobs/checkpoints/checkpoint_ledger.h).
struct ShardReport {
  int rank = 0;
  bool ok = false;
  uint64_t bytes = 0;
  uint32_t crc = 0;
  double snapshotSeconds = 0;  // the training thread's stall: state copied into memory
  double writeSeconds = 0;     // the background write (encode, write, fsync)
  std::string error;           // !ok: why the shard could not be written
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
  std::string state = "Running";  // workerStateName(): Running | Succeeded | Failed | Stopped
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

}  // namespace ddp::protocol
