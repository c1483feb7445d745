#pragma once
// CheckpointCoordinator: the collective protocol around CheckpointStore (Note [Checkpoint
// protocol]). Every rank calls save() / loadLatest() at the same point of its step sequence.
//
// Note [Checkpoint protocol]
// save(): every rank writes its shard atomically; an allreduce(MIN) of "my write succeeded"
// confirms that every rank wrote (a barrier that also carries failures); rank 0 then commits
// the MANIFEST (verifying every shard) and applies retention; a broadcast of the commit's
// outcome lets every rank report the same result. A rank whose write failed makes save() fail
// on every rank, with the checkpoint left incomplete (and skipped on resume).
// loadLatest(): rank 0 picks the newest complete checkpoint (reporting each newer one it skips
// and why) and broadcasts its step (-1: none); every rank verifies and reads its shard (and,
// for ZeRO, every rank's optimizer shard); an allreduce(MIN) of success makes a failure on any
// rank a failure on all.
// Thread model: the training thread only; every call is a collective over `backend`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "common/checkpoint/checkpoint_store.h"

namespace ddp::runtime {

struct LoadedCheckpoint {
  CheckpointShard shard;                 // this rank's
  std::vector<std::string> optimizerShards;  // every rank's "optimizer" section, by rank
  std::string path;                      // the step directory
};

class CheckpointCoordinator {
 public:
  CheckpointCoordinator(std::string dir, comm::Backend& backend, std::string job, int keep);

  // Returns the committed step directory.
  Result<std::string> save(const CheckpointShard& shard, Deadline deadline);
  // nullopt when there is no complete checkpoint.
  Result<std::optional<LoadedCheckpoint>> loadLatest(Deadline deadline);
  const CheckpointStore& store() const { return store_; }

 private:
  Result<int64_t> agreeMin(int64_t value, Deadline deadline);
  Result<int64_t> broadcastFromZero(int64_t value, Deadline deadline);

  CheckpointStore store_;
  comm::Backend& backend_;
  std::string job_;
  int keep_;
};

}  // namespace ddp::runtime
