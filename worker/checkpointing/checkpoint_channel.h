#pragma once
// CheckpointChannel: a rank's line to whoever decides whether a checkpoint is committed (the
// controller: Note [Two-phase checkpoint commit] in controller/jobs/checkpoints/checkpoint_ledger.h).
// Every rank reports its shard (phase 1); rank 0 asks for the decision and, after writing the
// MANIFEST, reports the commit (phase 2). ControllerClient::checkpointChannel() implements it
// over the controller's worker routes (docs/API.md); tests may implement it in process.
// Thread model: implementations are thread-safe; the checkpoint writer thread calls them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/protocol/worker_messages.h"
#include "common/status.h"

namespace ddp::runtime {

// The messages of the commit (common/protocol/worker_messages.h).
using protocol::CommitDecisionKind;
using protocol::CommitOutcome;
using protocol::CommitVerdictWire;
using protocol::ShardOutcome;

class CheckpointChannel {
 public:
  virtual ~CheckpointChannel() = default;
  virtual Result<CommitVerdictWire> reportShard(int64_t step, const ShardOutcome& outcome, Deadline deadline) = 0;
  virtual Result<CommitVerdictWire> decision(int64_t step, Deadline deadline) = 0;
  virtual Status reportCommit(int64_t step, const CommitOutcome& outcome, Deadline deadline) = 0;
};

}  // namespace ddp::runtime
