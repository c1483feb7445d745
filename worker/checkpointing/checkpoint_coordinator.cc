#include "worker/checkpointing/checkpoint_coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "common/log.h"
#include "common/secret.h"

namespace ddp::runtime {
namespace {

constexpr int64_t kNoFailedRank = std::numeric_limits<int64_t>::max();
// loadLatest's broadcast step when rank 0 found nothing to load from: none, unreadable, refused.
constexpr int64_t kNoCheckpoint = -1;
constexpr int64_t kUnreadable = -2;
constexpr int64_t kRefused = -3;


comm::OpOptions optsFor(Deadline d) {
  comm::OpOptions o;
  o.timeout = std::max(d.remaining(), Duration(std::chrono::milliseconds(1)));
  return o;
}

}  // namespace

CheckpointCoordinator::CheckpointCoordinator(std::string dir, comm::Backend& backend, JobIdentity job, int keep)
    : store_(std::move(dir)), backend_(backend), job_(std::move(job)), keep_(keep) {}

Status CheckpointCoordinator::prepareHere(Deadline deadline) {
  auto nonce = randomHex(4);
  const std::string tag = "rank-" + std::to_string(backend_.rank()) + "-" +
                          (nonce.isOk() ? *nonce : std::to_string(::getpid()));
  DDP_RETURN_IF_ERROR(store_.checkWritable(tag));
  if (backend_.rank() != 0) return Status::ok();
  if (!holdsLock()) {
    // Leave the other ranks (waiting in the agreement below) part of the deadline.
    const Deadline lockDeadline =
        deadline.min(Deadline::after(std::min<Duration>(kSameJobLockWait, deadline.remaining() / 2)));
    DDP_ASSIGN_OR_RETURN(CheckpointLock lock, CheckpointLock::acquire(store_.root(), job_.name, lockDeadline));
    lock_.emplace(std::move(lock));
    DDP_LOG(Info) << "checkpoint directory " << store_.root() << " locked for " << lock_->holder().describe();
  }
  return store_.checkOwnership(job_);
}

void CheckpointCoordinator::release() {
  writer_.reset();  // first: rank 0's writer writes MANIFESTs under the lock
  lock_.reset();
}

Status CheckpointCoordinator::prepare(Deadline deadline) {
  Status mine = prepareHere(deadline);
  // The lowest failed rank, and whether its failure is one no restart can fix (another job's
  // directory, no write access: PermissionDenied), which every rank then reports alike.
  const bool permanent = mine.code() == StatusCode::kPermissionDenied;
  const int64_t mineCode = mine.isOk() ? kNoFailedRank : 2 * int64_t{backend_.rank()} + (permanent ? 0 : 1);
  DDP_ASSIGN_OR_RETURN(int64_t failed, agreeMin(mineCode, deadline));
  if (failed == kNoFailedRank) return Status::ok();
  lock_.reset();  // this job does not start: let the directory go
  // Every rank reports the failed rank's own reason (whichever exit the controller sees first
  // becomes the job's condition).
  const int root = static_cast<int>(failed / 2);
  DDP_ASSIGN_OR_RETURN(std::string why, shareMessage(root, mine.message(), deadline));
  if (!mine.isOk()) return mine;
  why = "rank " + std::to_string(root) + ": " + why;
  return failed % 2 == 0 ? permissionDenied(why) : failedPrecondition(why);
}

Result<std::string> CheckpointCoordinator::shareMessage(int root, const std::string& mine, Deadline deadline) {
  constexpr size_t kBytes = 1024;
  std::vector<int32_t> buf(kBytes / 4, 0);
  if (backend_.rank() == root) std::memcpy(buf.data(), mine.data(), std::min(mine.size(), kBytes - 1));
  auto w = backend_.broadcast(comm::viewOf(buf.data(), buf.size()), root, optsFor(deadline));
  DDP_RETURN_IF_ERROR(w->wait(deadline));
  const char* text = reinterpret_cast<const char*>(buf.data());
  return std::string(text, strnlen(text, kBytes - 1));
}

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
  Status wrote = store_.writeShard(shard).status();
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
    auto m = store_.commit(shard.step, backend_.size(), job_, unixMillisNow());
    if (!m.isOk()) {
      commitStatus = m.status();
      committed = 0;
    } else if (Status st = store_.applyRetention(keep_, job_, shard.step); !st.isOk()) {
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

void CheckpointCoordinator::useChannel(CheckpointChannel& channel, CheckpointWriterConfig config) {
  config.rank = backend_.rank();
  config.worldSize = backend_.size();
  config.job = job_;
  config.keep = keep_;
  writer_.reset();
  writer_ = std::make_unique<CheckpointWriter>(store_, channel, std::move(config));
}

Status CheckpointCoordinator::saveAsync(CheckpointSnapshot snapshot, double snapshotSeconds, Deadline deadline) {
  if (!writer_) return failedPrecondition("asynchronous checkpoint without a channel (useChannel)");
  return writer_->submit(std::move(snapshot), snapshotSeconds, deadline);
}

Status CheckpointCoordinator::drain(Deadline deadline) { return writer_ ? writer_->drain(deadline) : Status::ok(); }

std::vector<WrittenCheckpoint> CheckpointCoordinator::takeFinished() {
  return writer_ ? writer_->takeFinished() : std::vector<WrittenCheckpoint>{};
}

Result<int64_t> CheckpointCoordinator::chooseStep(std::optional<std::string>* startOverWarning) const {
  DDP_RETURN_IF_ERROR(store_.checkOwnership(job_));
  DDP_ASSIGN_OR_RETURN(LatestCheckpoint latest, store_.findLatestComplete(backend_.size(), job_));
  if (!latest.manifest) {
    if (latest.skipped.empty()) return kNoCheckpoint;
    std::string reasons;
    for (const auto& s : latest.skipped) reasons += (reasons.empty() ? "" : "; ") + s;
    *startOverWarning = "no usable checkpoint in " + store_.root() + ": " + std::to_string(latest.skipped.size()) +
                        " checkpoint(s) skipped (" + reasons + "); starting from step 0";
    DDP_LOG(Warning) << **startOverWarning;
    return kNoCheckpoint;
  }
  for (const auto& s : latest.skipped) {
    DDP_LOG(Warning) << "skipping checkpoint " << s << " (falling back to an older one)";
  }
  if (!latest.manifest->specHash) {
    DDP_LOG(Warning) << "checkpoint step " << latest.manifest->step << " in " << store_.root()
                     << " predates job identity (manifest version 1); resuming it because its job name '"
                     << latest.manifest->job << "' matches";
  }
  return latest.manifest->step;
}

Result<LatestLoad> CheckpointCoordinator::loadLatest(Deadline deadline) {
  int64_t step = kNoCheckpoint;
  Status findStatus;
  LatestLoad result;
  if (backend_.rank() == 0) {
    auto chosen = chooseStep(&result.startOverWarning);
    if (chosen.isOk()) {
      step = *chosen;
    } else {
      findStatus = chosen.status();
      step = findStatus.code() == StatusCode::kPermissionDenied ? kRefused : kUnreadable;
    }
  }
  DDP_ASSIGN_OR_RETURN(step, broadcastFromZero(step, deadline));
  if (step == kUnreadable || step == kRefused) {
    if (!findStatus.isOk()) return findStatus;
    return step == kRefused ? permissionDenied("rank 0 refused the checkpoint directory " + store_.root() +
                                                 ": it holds another job's checkpoints (see rank 0's log)")
                            : unavailable("rank 0 could not read the checkpoint directory " + store_.root());
  }
  if (step < 0) return result;

  LoadedCheckpoint out;
  out.path = store_.stepDir(step);
  Status mine = [&]() -> Status {
    DDP_ASSIGN_OR_RETURN(CheckpointManifest m, store_.verify(step));
    out.savedWorldSize = m.worldSize;
    out.newRank = backend_.rank() >= m.worldSize;
    const int own = out.newRank ? 0 : backend_.rank();  // Note [Checkpoints at any world size]
    auto sectionOf = [](const CheckpointShard& s, const char* name) {
      auto sec = s.section(name);
      return sec.isOk() ? std::string(*sec) : std::string();
    };
    for (int r = 0; r < m.worldSize; ++r) {
      DDP_ASSIGN_OR_RETURN(CheckpointShard s, store_.readShard(m, r));
      out.optimizerShards.push_back(sectionOf(s, "optimizer"));
      out.commHookStates.push_back(sectionOf(s, "comm_hook"));
      out.samplerStates.push_back(sectionOf(s, "sampler"));
      if (r == own) out.shard = std::move(s);
    }
    return Status::ok();
  }();
  if (!mine.isOk()) DDP_LOG(Error) << "loading checkpoint step " << step << ": " << mine;
  DDP_ASSIGN_OR_RETURN(int64_t allOk, agreeMin(mine.isOk() ? 1 : 0, deadline));
  if (allOk == 0) {
    return mine.isOk() ? dataLoss("checkpoint step " + std::to_string(step) + ": another rank could not read it")
                       : mine;
  }
  if (backend_.rank() == 0 && out.worldSizeChanged(backend_.size())) {
    DDP_LOG(Info) << "resuming step " << step << " written by " << out.savedWorldSize << " workers at world size "
                  << backend_.size() << " (" << out.path << ")";
  }
  result.checkpoint = std::move(out);
  return result;
}

}  // namespace ddp::runtime
