#pragma once
// The heartbeat (docs/API.md, "Heartbeats"): the one message a worker posts every period and
// the controller reads, as one struct on both sides. Its parts both sides name alike are in
// heartbeat_parts.h; its one encoder and one decoder in heartbeat_codec.h (Note [One heartbeat]).
// Thread model: plain values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_format.h"
#include "common/protocol/heartbeat_parts.h"
#include "common/protocol/vocabulary.h"

namespace ddp::protocol {

using runtime::ManifestEntry;

// One rank's phase-1 report of the checkpoint commit (Note [Two-phase checkpoint commit] in
// controller/jobs/checkpoints/checkpoint_ledger.h): the body of the phase-1 route, and repeated
// in every heartbeat after it was delivered.
struct ShardOutcome {
  int rank = 0;
  bool ok = false;
  ManifestEntry entry;         // ok: the shard file's size and CRC-32
  double snapshotSeconds = 0;  // the training thread's stall
  double writeSeconds = 0;     // the background write
  std::string error;           // !ok: why
};

struct HeartbeatCounters {  // cumulative over the steps this process ran
  int64_t samples = 0;
  int64_t steps = 0;
  double stepSeconds = 0;
  int64_t commBytes = 0;
  double commExposedSeconds = 0;
  int64_t compressionUncompressedBytes = 0;
  int64_t compressionSentBytes = 0;
  bool operator==(const HeartbeatCounters&) const = default;
};

// The last phase-1 shard report this process delivered (Note [Two-phase checkpoint commit]):
// heartbeats repeat it, so a controller that restarted after receiving it learns it again.
struct LastShardReport {
  int64_t generation = 0;
  int64_t step = 0;
  ShardOutcome outcome;
};

// Note [One heartbeat]
// The worker fills a Heartbeat and encodes it (encodeHeartbeat); the controller decodes the
// same struct (decodeHeartbeat, read tolerantly: an older worker sends fewer fields, every field
// but the worker id may be absent and keeps its default). One struct, one encoder, one decoder,
// so a field added on one side is there on the other; tests/unit/protocol/heartbeat_codec_test.cc
// holds heartbeats captured from the encoder that the two sides' separate structs had, and
// checks they still decode the same.
struct Heartbeat {
  std::string workerId;
  // Not on the wire: the X-DDP-Incarnation header the controller read the body with ("":
  // unchecked; Note [Worker incarnations]).
  std::string incarnation;
  int rank = -1;
  WorkerState state = WorkerState::kRunning;
  int64_t step = 0;
  int64_t totalSteps = 0;
  int64_t epoch = 0;  // 0-based epoch in progress
  int64_t epochs = 0;
  double loss = 0;  // a non-finite loss goes out as null (the controller keeps its last value)
  double samplesPerSecond = 0;
  std::optional<double> testAccuracy;  // null until the first evaluation
  // Language models only (absent otherwise): the last validation's mean loss, global training
  // tokens/s and model FLOPs utilisation (fraction).
  std::optional<double> valLoss;
  std::optional<double> tokensPerSecond;
  std::optional<double> mfu;
  HeartbeatCounters counters;
  std::vector<CollectiveView> collectives;  // per backend: last issued, oldest unfinished
  std::vector<FlightOp> flightRecord;       // only in answer to the `flightRecord` command
  std::optional<HeartbeatCheckpoint> checkpoint;
  std::optional<LastShardReport> lastShard;  // filled in by ControllerClient::heartbeat
  std::string message;
  std::map<std::string, double> ext;  // figures later versions add (numbers only)
  // Succeeded, Failed or Stopped: the worker's last heartbeat.
  bool final() const { return state != WorkerState::kRunning; }
};

}  // namespace ddp::protocol
