#pragma once
// The messages of the worker <-> controller protocol as the worker sends and reads them
// (docs/API.md, "Worker routes"): registration, assignment, the heartbeat's answer, the
// two-phase checkpoint commit's reports and verdict. The heartbeat itself, one struct for both
// sides, is heartbeat.h (codec: heartbeat_codec.h). Their JSON codecs: worker_codec.h; the
// controller's reading of the phase-1 report: controller_codec.h.
// Thread model: plain values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/checkpoint/checkpoint_format.h"
#include "common/protocol/heartbeat.h"
#include "common/protocol/vocabulary.h"

namespace ddp::protocol {

using runtime::CommittedCheckpoint;

// ---- The checkpoint commit (Note [Two-phase checkpoint commit]) ----

enum class CommitDecisionKind { kPending, kCommit, kAbandon };

struct CommitVerdictWire {
  CommitDecisionKind decision = CommitDecisionKind::kPending;
  std::string reason;                // kAbandon: why
  std::vector<ManifestEntry> shards;  // kCommit: every rank's, by rank
};

struct CommitOutcome {
  bool ok = false;
  std::string error;
  int64_t bytes = 0;
  std::string path;
  double seconds = 0;           // decision -> MANIFEST on disk
  // The job's complete checkpoints after retention; empty when the directory could not be listed
  // (then the controller's catalog is left as it is).
  std::optional<std::vector<int64_t>> onDisk;
  // The same checkpoints with their sizes (Note [Catalog follows the disk]); empty when unknown.
  std::vector<CommittedCheckpoint> onDiskDetail;
};

// ---- Registration, assignment, heartbeats ----

// What a worker that aborted its communicator after a fault says when it registers again
// (Note [Worker generations] in worker_entry.cc).
struct Rejoin {
  int64_t leftGeneration = 0;  // 0: a first registration
  std::string reason;
  int64_t lastStep = -1;       // the last step completed in the left generation (-1 unknown)
};

struct Registration {
  std::string workerId;
  int64_t generation = 0;  // the round it joined, or will join
  std::string incarnation;  // this process's hold on the worker id ("" from an older controller)
};

struct PeerInfo {
  int rank = 0;
  std::string workerId;
  std::string advertiseAddress;
  bool operator==(const PeerInfo&) const = default;
};

struct Assignment {
  int rank = -1;
  int worldSize = 0;
  int64_t generation = 0;
  std::string specYaml;  // the validated spec, every default filled in
  // The version of the spec's schema the controller speaks (kJobSpecSchemaVersion; absent in
  // the message of a controller from before it was sent: 1).
  int specSchema = 1;
  std::vector<PeerInfo> peers;
  bool operator==(const Assignment&) const = default;
};

// The command a heartbeat's answer carries (both sides use this one).
struct Command {
  CommandType type = CommandType::kNone;
  int64_t step = -1;  // kCheckpoint: the step to checkpoint at
  bool operator==(const Command&) const = default;
};

struct HeartbeatAnswer {
  Command command;
  int64_t generation = 0;
  bool operator==(const HeartbeatAnswer&) const = default;
};

}  // namespace ddp::protocol
