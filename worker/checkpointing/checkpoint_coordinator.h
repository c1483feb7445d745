#pragma once
// CheckpointCoordinator: the collective protocol around CheckpointStore (Note [Checkpoint
// protocol]). Every rank calls prepare(), save() and loadLatest() at the same point of its step
// sequence. The trainer calls prepare() once in setup, before anything is trained.
//
// Note [Checkpoint start checks]
// prepare(): every rank checks that it can write the directory (creates it, writes, fsyncs and
// removes a probe file: a read-only mount fails the start, not the first checkpoint); rank 0
// then takes the directory's lock (Note [Checkpoint directory lock] in
// common/checkpoint/checkpoint_lock.h; waiting up to kSameJobLockWait for a previous run of the
// same job to exit) and refuses a directory holding another job's checkpoints (Note
// [Checkpoint job identity] in common/checkpoint/checkpoint_format.h). An allreduce(MIN) of
// "the lowest rank that failed" makes a failure on any rank a failure on all, each naming that
// rank. The lock is held until the coordinator is destroyed (the trainer's lifetime).
//
// Note [Checkpoint protocol]
// save(): every rank writes its shard atomically; an allreduce(MIN) of "my write succeeded"
// confirms that every rank wrote (a barrier that also carries failures); rank 0 then commits
// the MANIFEST (verifying every shard) and applies retention; a broadcast of the commit's
// outcome lets every rank report the same result. A rank whose write failed makes save() fail
// on every rank, with the checkpoint left incomplete (and skipped on resume).
// loadLatest(): rank 0 refuses another job's checkpoints (as prepare()), picks this job's
// newest complete checkpoint, at any world size (reporting each newer one it skips and why;
// Note [Checkpoints at any world size]) and broadcasts its step (-1: none); every rank
// verifies and reads its shard (rank 0's when it is new) and every saved rank's per-rank
// sections; an allreduce(MIN) of success makes a failure on any rank a failure on all. When checkpoints exist but none is usable, rank 0 says at Warning level that
// the run starts over, and returns that text (LatestLoad::startOverWarning) for the trainer to
// publish.
// With a channel (useChannel), save() is replaced by saveAsync(): not a collective; the commit
// is the controller's (Note [Two-phase checkpoint commit] in controller/jobs/checkpoints/checkpoint_ledger.h)
// and the writing is done by a CheckpointWriter's thread.
// Thread model: the training thread only; every call except the asynchronous ones is a
// collective over `backend`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "common/checkpoint/checkpoint_lock.h"
#include "common/checkpoint/checkpoint_store.h"
#include "worker/checkpointing/checkpoint_writer.h"

namespace ddp::runtime {

// Note [Checkpoints at any world size]
// A checkpoint written by N ranks loads at any world size M (docs/ELASTIC.md). The "trainer"
// and "model" sections are replicated (identical on every rank), so any rank's shard serves
// them: rank r < N gets its own shard, a rank that did not exist in the old world (r >= N, a
// grown job) gets rank 0's. What is per rank and needs resharding comes from every old rank:
// the "optimizer" sections (ZeRO shards; DistributedFusedAdam's full stream on rank 0; a plain
// optimizer's replicated state), the "comm_hook" sections (PowerSGD's per-rank error feedback,
// worker/training/training_setup.h commHookStateForWorld) and the "sampler" sections.
struct LoadedCheckpoint {
  // This rank's shard, or rank 0's when this rank did not exist in the saved world (newRank).
  CheckpointShard shard;
  int savedWorldSize = 0;  // the world size that wrote it (== the manifest's)
  bool newRank = false;    // this rank >= savedWorldSize: `shard` is rank 0's
  // Every saved rank's section, indexed by saved rank (empty string: the rank had none).
  std::vector<std::string> optimizerShards;  // "optimizer"
  std::vector<std::string> commHookStates;   // "comm_hook"
  std::vector<std::string> samplerStates;    // "sampler"
  std::string path;                          // the step directory
  bool worldSizeChanged(int worldSize) const { return savedWorldSize != worldSize; }
};

// What loadLatest() found.
struct LatestLoad {
  std::optional<LoadedCheckpoint> checkpoint;  // empty: the run starts from step 0
  // Rank 0 only: set when the directory held checkpoints and none could be used ("no usable
  // checkpoint in DIR: N checkpoint(s) skipped (reasons); starting from step 0"); already
  // logged at Warning level.
  std::optional<std::string> startOverWarning;
};

class CheckpointCoordinator {
 public:
  // `job`: this job's identity, recorded in every manifest and required of every checkpoint
  // it resumes. `keep`: retention (Note [Checkpoint retention]); <= 0 keeps everything.
  CheckpointCoordinator(std::string dir, comm::Backend& backend, JobIdentity job, int keep);

  // Note [Checkpoint start checks]. Call once before the first save() / loadLatest(); without
  // it nothing is probed or locked. Idempotent on rank 0 (keeps the lock it holds).
  Status prepare(Deadline deadline);
  // Returns the committed step directory.
  Result<std::string> save(const CheckpointShard& shard, Deadline deadline);

  // From now on checkpoints go through the controller's two-phase commit, asynchronously
  // (Note [Asynchronous checkpoints] in checkpoint_writer.h) instead of save()'s collective
  // commit. `config`'s rank, world size, job and retention are filled in here. `channel` must
  // outlive this coordinator.
  void useChannel(CheckpointChannel& channel, CheckpointWriterConfig config);
  bool asynchronous() const { return writer_ != nullptr; }
  // Hands a snapshot to the writer (waiting for the previous checkpoint first). Not a collective.
  Status saveAsync(CheckpointSnapshot snapshot, double snapshotSeconds, Deadline deadline);
  // Waits for the writer (end of a run, a stop). Ok at once when not asynchronous.
  Status drain(Deadline deadline);
  // Checkpoints the writer finished since the last call.
  std::vector<WrittenCheckpoint> takeFinished();
  Result<LatestLoad> loadLatest(Deadline deadline);
  const CheckpointStore& store() const { return store_; }
  const JobIdentity& job() const { return job_; }
  // Rank 0 after prepare(): true while it holds the directory's lock.
  bool holdsLock() const { return lock_.has_value() && lock_->held(); }
  // After a failed run: stops the writer (a checkpoint in flight is abandoned, uncommitted) and
  // lets the directory's lock go, so that the next generation's rank 0, possibly another
  // process, can take it while this one is still tearing down. Nothing may be saved afterwards.
  void release();

 private:
  Status prepareHere(Deadline deadline);
  // Rank 0: the step loadLatest() loads (-1: none), or FailedPrecondition (another job's
  // checkpoints) / the directory's read error.
  Result<int64_t> chooseStep(std::optional<std::string>* startOverWarning) const;
  Result<int64_t> agreeMin(int64_t value, Deadline deadline);
  Result<int64_t> broadcastFromZero(int64_t value, Deadline deadline);
  // `root`'s text (at most 1023 bytes) on every rank.
  Result<std::string> shareMessage(int root, const std::string& mine, Deadline deadline);

  CheckpointStore store_;
  comm::Backend& backend_;
  JobIdentity job_;
  int keep_;
  std::optional<CheckpointLock> lock_;  // rank 0, from prepare() to release() or destruction
  std::unique_ptr<CheckpointWriter> writer_;  // last: stopped before the lock goes
};

}  // namespace ddp::runtime
