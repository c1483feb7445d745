#include "worker/runtime/checkpoint_coordinator.h"

#include <chrono>

#include "common/log.h"

namespace ddp::runtime {
namespace {

int64_t unixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

comm::OpOptions optsFor(Deadline d) {
  comm::OpOptions o;
  o.timeout = std::max(d.remaining(), Duration(std::chrono::milliseconds(1)));
  return o;
}

}  // namespace

CheckpointCoordinator::CheckpointCoordinator(std::string dir, comm::Backend& backend, std::string job, int keep)
    : store_(std::move(dir)), backend_(backend), job_(std::move(job)), keep_(keep) {}

Result<int64_t> CheckpointCoordinator::agreeMin(int64_t value, Deadline deadline) {
  int64_t v = value;
  auto w = backend_.allreduce(comm::viewOf(&v, 1), comm::ReduceOp::kMin, optsFor(deadline));
  DDP_RETURN_IF_ERROR(w->wait(deadline));
  return v;
}

Result<int64_t> CheckpointCoordinator::broadcastFromZero(int64_t value, Deadline deadline) {
  int64_t v = value;
  auto w = backend_.broadcast(comm::viewOf(&v, 1), 0, optsFor(deadline));
  DDP_RETURN_IF_ERROR(w->wait(deadline));
  return v;
}

Result<std::string> CheckpointCoordinator::save(const CheckpointShard& shard, Deadline deadline) {
  Status wrote = store_.writeShard(shard);
  if (!wrote.isOk()) DDP_LOG(Error) << "checkpoint: " << wrote;
  DDP_ASSIGN_OR_RETURN(int64_t allWrote, agreeMin(wrote.isOk() ? 1 : 0, deadline));
  if (allWrote == 0) {
    return wrote.isOk() ? unavailable("checkpoint step " + std::to_string(shard.step) +
                                      ": another rank failed to write its shard (see its log)")
                        : wrote;
  }
  int64_t committed = 1;
  Status commitStatus;
  if (backend_.rank() == 0) {
    auto m = store_.commit(shard.step, backend_.size(), job_, unixMillis());
    if (!m.isOk()) {
      commitStatus = m.status();
      committed = 0;
    } else if (Status st = store_.applyRetention(keep_); !st.isOk()) {
      DDP_LOG(Warning) << "checkpoint retention: " << st;
    }
  }
  DDP_ASSIGN_OR_RETURN(committed, broadcastFromZero(committed, deadline));
  if (committed == 0) {
    if (!commitStatus.isOk()) return commitStatus;
    return unavailable("checkpoint step " + std::to_string(shard.step) + ": rank 0 could not commit the manifest");
  }
  return store_.stepDir(shard.step);
}

Result<std::optional<LoadedCheckpoint>> CheckpointCoordinator::loadLatest(Deadline deadline) {
  int64_t step = -1;
  Status findStatus;
  if (backend_.rank() == 0) {
    auto latest = store_.findLatestComplete(backend_.size());
    if (!latest.isOk()) {
      findStatus = latest.status();
      step = -2;
    } else {
      for (const auto& s : latest->skipped) {
        DDP_LOG(Warning) << "skipping checkpoint " << s << " (falling back to an older one)";
      }
      if (latest->manifest) step = latest->manifest->step;
    }
  }
  DDP_ASSIGN_OR_RETURN(step, broadcastFromZero(step, deadline));
  if (step == -2) {
    return findStatus.isOk() ? unavailable("rank 0 could not read the checkpoint directory " + store_.root())
                             : findStatus;
  }
  if (step < 0) return std::optional<LoadedCheckpoint>();

  LoadedCheckpoint out;
  out.path = store_.stepDir(step);
  Status mine = [&]() -> Status {
    DDP_ASSIGN_OR_RETURN(CheckpointManifest m, store_.verify(step));
    for (int r = 0; r < m.worldSize; ++r) {
      DDP_ASSIGN_OR_RETURN(CheckpointShard s, store_.readShard(m, r));
      auto opt = s.section("optimizer");
      out.optimizerShards.push_back(opt.isOk() ? std::string(*opt) : std::string());
      if (r == backend_.rank()) out.shard = std::move(s);
    }
    return Status::ok();
  }();
  if (!mine.isOk()) DDP_LOG(Error) << "loading checkpoint step " << step << ": " << mine;
  DDP_ASSIGN_OR_RETURN(int64_t allOk, agreeMin(mine.isOk() ? 1 : 0, deadline));
  if (allOk == 0) {
    return mine.isOk() ? dataLoss("checkpoint step " + std::to_string(step) + ": another rank could not read it")
                       : mine;
  }
  return std::optional<LoadedCheckpoint>(std::move(out));
}

}  // namespace ddp::runtime
