#pragma once
// The committed checkpoints a directory holds for one job, as the controller's catalog lists them
// (Note [Catalog follows the disk] in checkpoint_catalog.cc): rank 0 sends them with each commit
// report, and a controller whose workers share its filesystem reads them at start.
// Thread model: pure functions over the filesystem; no state.

#include <cstdint>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_store.h"
#include "common/status.h"

namespace ddp::runtime {

struct CommittedCheckpoint {
  int64_t step = 0;
  int64_t bytes = 0;         // every shard together
  int worldSize = 0;
  int64_t createdUnixMs = 0; // rank 0's clock at commit
  std::string path;          // the step directory
  bool operator==(const CommittedCheckpoint&) const = default;
};

// Every step directory of `store` whose MANIFEST reads and names job `jobName`, oldest first.
// A missing directory holds none; NotFound is not an error here.
Result<std::vector<CommittedCheckpoint>> listCommitted(const CheckpointStore& store, const std::string& jobName);

}  // namespace ddp::runtime
