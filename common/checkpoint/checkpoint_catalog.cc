#include "common/checkpoint/checkpoint_catalog.h"

// Note [Catalog follows the disk]
// The controller's checkpoint catalog (ddpctl checkpoints) is written from commit reports. A
// controller SIGKILLed between a MANIFEST landing on disk and the report of it, or between
// retention deleting a step and the next report, kept a catalog that listed a deleted step and
// missed a committed one until the next commit. So rank 0's commit report carries every committed
// checkpoint of the job left after retention (not only the new one) and the catalog is set to
// exactly that; and a controller whose workers share its filesystem (the local launcher) lists
// each job's checkpoint directory when it starts. A MANIFEST is the commit point: a step
// directory without one is a dead partial and never listed.

namespace ddp::runtime {

Result<std::vector<CommittedCheckpoint>> listCommitted(const CheckpointStore& store, const std::string& jobName) {
  auto steps = store.listSteps();
  if (!steps.isOk()) {
    if (steps.status().code() == StatusCode::kNotFound) return std::vector<CommittedCheckpoint>{};
    return steps.status();
  }
  std::vector<CommittedCheckpoint> out;
  for (int64_t step : *steps) {
    auto m = store.readManifest(step);
    if (!m.isOk() || m->job != jobName) continue;
    CommittedCheckpoint c;
    c.step = step;
    for (const ManifestEntry& e : m->shards) c.bytes += static_cast<int64_t>(e.bytes);
    c.worldSize = m->worldSize;
    c.createdUnixMs = m->createdUnixMs;
    c.path = store.stepDir(step);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ddp::runtime
