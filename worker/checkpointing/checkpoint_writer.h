#pragma once
// CheckpointWriter: one rank's asynchronous checkpoint pipeline under the controller's
// two-phase commit (Note [Two-phase checkpoint commit] in controller/jobs/checkpoints/checkpoint_ledger.h).
//
// Note [Asynchronous checkpoints]
// At a checkpoint step the training thread only copies its state into memory (the shard's
// sections: parameters and a plain optimizer's state as raw copies, whose framing and checksums
// are left to the writer; ZeRO/DFA shards, PowerSGD state, sampler and trainer state encoded)
// and hands it to submit(); training goes on while this writer's thread
//   1. encodes the deferred sections and writes the shard atomically (fsync; CRC-32 of the
//      file),
//   2. reports (step, ok, bytes, CRC, snapshot and write seconds) to the channel,
//   3. on rank 0 only: asks for the decision until it is Commit or Abandon (or the commit
//      timeout passes), writes the MANIFEST from the reported sizes and checksums, applies
//      retention, and reports the commit with the job's checkpoints left on disk.
// One checkpoint is in flight at a time: submit() first waits for the previous one, and that
// wait counts as the stall. A failure at any point leaves the checkpoint uncommitted (never a
// MANIFEST without every rank's shard) and training goes on; it is reported through
// takeFinished() and the controller's events. drain() waits for the pipeline (the end of a
// run, a stop); the destructor stops waiting for a decision, lets a file write finish, joins.
// Thread model: submit(), drain() and takeFinished() from the training thread; one internal
// thread does the I/O; the store and the channel must outlive the writer.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/checkpoint/checkpoint_store.h"
#include "common/clock.h"
#include "common/status.h"
#include "worker/checkpointing/checkpoint_channel.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {

// A checkpoint as the training thread hands it over: the sections it encoded, and the ones
// whose encoding (framing, checksum) it left to the writer's thread (their state is already
// copied into the functions). materialize() encodes those into `shard`.
struct CheckpointSnapshot {
  CheckpointShard shard;
  std::vector<std::pair<std::string, std::function<std::string()>>> deferred;
  CheckpointShard& materialize();
};

struct CheckpointWriterConfig {
  int rank = 0;
  int worldSize = 1;
  JobIdentity job;
  int keep = 0;  // retention (rank 0), Note [Checkpoint retention]
  Duration requestTimeout = std::chrono::seconds(10);  // each report to the channel
  Duration commitTimeout = std::chrono::seconds(300);  // rank 0: from its report to a decision
  Duration pollInterval = std::chrono::milliseconds(50);
  // Fault injection for tests (TrainingFaults::shardWrite: a shard write that fails or starts
  // late); nullptr: none. Must outlive the writer.
  const TrainingFaults* faults = nullptr;
};

// One finished checkpoint as this rank saw it.
struct WrittenCheckpoint {
  int64_t step = 0;
  bool ok = false;         // rank 0: committed (MANIFEST written); other ranks: shard written and reported
  std::string path;        // the step directory
  int64_t bytes = 0;       // this rank's shard (rank 0: every shard)
  double snapshotSeconds = 0;
  double writeSeconds = 0;
  double commitSeconds = 0;  // rank 0: its report -> MANIFEST on disk
  std::string message;       // !ok: why it is not committed
};

class CheckpointWriter {
 public:
  CheckpointWriter(CheckpointStore& store, CheckpointChannel& channel, CheckpointWriterConfig config);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits (up to `deadline`) for the previous checkpoint to leave the pipeline, then takes
  // `shard`. Timeout when the previous one is still in flight at the deadline.
  Status submit(CheckpointSnapshot snapshot, double snapshotSeconds, Deadline deadline);
  // Waits until nothing is in flight. Timeout naming the step otherwise.
  Status drain(Deadline deadline);
  // The checkpoints finished since the last call, oldest first.
  std::vector<WrittenCheckpoint> takeFinished();

 private:
  struct Job {
    CheckpointSnapshot snapshot;
    double snapshotSeconds = 0;
  };
  void loop();
  WrittenCheckpoint process(Job& job);
  // Rank 0: decision -> MANIFEST -> retention -> commit report.
  void commit(WrittenCheckpoint* out, const std::vector<ManifestEntry>& shards,
              std::chrono::steady_clock::time_point reported);
  Result<CommitVerdictWire> awaitDecision(int64_t step, CommitVerdictWire first);
  bool cancelled();

  CheckpointStore& store_;
  CheckpointChannel& channel_;
  const CheckpointWriterConfig config_;

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::optional<Job> next_;
  bool busy_ = false;  // next_ taken and being processed
  int64_t inFlightStep_ = -1;
  bool stop_ = false;
  std::vector<WrittenCheckpoint> finished_;
  std::thread thread_;
};

}  // namespace ddp::runtime
