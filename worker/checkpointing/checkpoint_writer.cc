#include "worker/checkpointing/checkpoint_writer.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace ddp::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

double secondsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}


int64_t shardBytes(const std::vector<ManifestEntry>& shards) {
  int64_t total = 0;
  for (const auto& e : shards) total += static_cast<int64_t>(e.bytes);
  return total;
}

}  // namespace

CheckpointShard& CheckpointSnapshot::materialize() {
  for (auto& [name, encode] : deferred) shard.sections[name] = encode();
  deferred.clear();
  return shard;
}

CheckpointWriter::CheckpointWriter(CheckpointStore& store, CheckpointChannel& channel, CheckpointWriterConfig config)
    : store_(store), channel_(channel), config_(std::move(config)) {
  thread_ = std::thread([this] { loop(); });
}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status CheckpointWriter::submit(CheckpointSnapshot snapshot, double snapshotSeconds, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool free = cv_.wait_until(lock, deadline.at(), [this] { return !next_ && !busy_; });
  if (!free) {
    return timeoutError("checkpoint step " + std::to_string(snapshot.shard.step) + ": the previous checkpoint (step " +
                        std::to_string(inFlightStep_) + ") is still being written");
  }
  inFlightStep_ = snapshot.shard.step;
  next_ = Job{std::move(snapshot), snapshotSeconds};
  cv_.notify_all();
  return Status::ok();
}

Status CheckpointWriter::drain(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline.at(), [this] { return !next_ && !busy_; })) {
    return timeoutError("checkpoint step " + std::to_string(inFlightStep_) + " is still being written");
  }
  return Status::ok();
}

std::vector<WrittenCheckpoint> CheckpointWriter::takeFinished() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WrittenCheckpoint> out;
  out.swap(finished_);
  return out;
}

bool CheckpointWriter::cancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void CheckpointWriter::loop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || next_.has_value(); });
      if (!next_) return;  // stopping with nothing to write
      job = std::move(*next_);
      next_.reset();
      busy_ = true;
    }
    // A checkpoint handed over before the stop is still written (its snapshot is consistent);
    // only the wait for its decision is cut short.
    WrittenCheckpoint done = process(job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_.push_back(std::move(done));
      busy_ = false;
    }
    cv_.notify_all();
  }
}

WrittenCheckpoint CheckpointWriter::process(Job& job) {
  WrittenCheckpoint out;
  const CheckpointShard& shard = job.snapshot.shard;
  out.step = shard.step;
  out.path = store_.stepDir(out.step);
  out.snapshotSeconds = job.snapshotSeconds;
  const std::string what = "checkpoint step " + std::to_string(out.step);
  const ShardWriteFault fault = config_.faults != nullptr ? config_.faults->shardWrite(out.step) : ShardWriteFault{};
  if (fault.delaySeconds > 0) {
    DDP_LOG(Warning) << "fault injection: " << what << ": the shard write starts " << fault.delaySeconds << " s late";
    std::this_thread::sleep_for(std::chrono::duration<double>(fault.delaySeconds));
  }
  const auto t0 = SteadyClock::now();
  job.snapshot.materialize();
  ShardOutcome report;
  report.rank = config_.rank;
  report.snapshotSeconds = job.snapshotSeconds;
  Result<ManifestEntry> entry = fault.fail
                                    ? Result<ManifestEntry>(unavailable("fault injection: shard write failed"))
                                    : store_.writeShard(shard);
  job.snapshot.shard.sections.clear();  // the snapshot's memory goes as soon as it is on disk
  out.writeSeconds = report.writeSeconds = secondsSince(t0);
  if (entry.isOk()) {
    report.ok = true;
    report.entry = *entry;
    out.bytes = static_cast<int64_t>(entry->bytes);
  } else {
    report.error = entry.status().message();
    out.message = "this rank could not write its shard: " + report.error;
    DDP_LOG(Error) << what << ": " << out.message << " (the checkpoint is not committed; training goes on)";
  }
  const auto reported = SteadyClock::now();
  auto verdict = channel_.reportShard(out.step, report, Deadline::after(config_.requestTimeout));
  if (!verdict.isOk()) {
    if (out.message.empty()) out.message = "the report did not reach the controller: " + verdict.status().message();
    DDP_LOG(Warning) << what << ": " << out.message << " (not committed)";
    return out;
  }
  if (!report.ok) return out;
  if (config_.rank != 0) {
    out.ok = true;  // written and reported: rank 0 commits it once every rank has
    return out;
  }
  auto decided = awaitDecision(out.step, *verdict);
  if (!decided.isOk()) {
    out.message = decided.status().message();
  } else if (decided->decision == CommitDecisionKind::kAbandon) {
    out.message = decided->reason;
  } else {
    commit(&out, decided->shards, reported);
  }
  if (!out.ok) DDP_LOG(Warning) << what << " is not committed: " << out.message;
  return out;
}

Result<CommitVerdictWire> CheckpointWriter::awaitDecision(int64_t step, CommitVerdictWire v) {
  const Deadline deadline = Deadline::after(config_.commitTimeout);
  while (v.decision == CommitDecisionKind::kPending) {
    if (cancelled()) return abortedError("the generation ended before every rank reported");
    if (deadline.expired()) {
      return timeoutError("no decision within " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(config_.commitTimeout).count()) +
                          " s of this rank's report");
    }
    std::this_thread::sleep_for(std::min(config_.pollInterval, deadline.remaining()));
    DDP_ASSIGN_OR_RETURN(v, channel_.decision(step, Deadline::after(std::min(config_.requestTimeout, deadline.remaining()))));
  }
  return v;
}

void CheckpointWriter::commit(WrittenCheckpoint* out, const std::vector<ManifestEntry>& shards,
                              std::chrono::steady_clock::time_point reported) {
  CommitOutcome c;
  auto m = static_cast<int>(shards.size()) == config_.worldSize
               ? store_.commitReported(out->step, shards, config_.job, unixMillisNow())
               : Result<CheckpointManifest>(dataLoss("the decision lists " + std::to_string(shards.size()) +
                                                     " shards for " + std::to_string(config_.worldSize) + " ranks"));
  c.seconds = out->commitSeconds = secondsSince(reported);
  if (!m.isOk()) {
    c.error = m.status().message();
    out->message = "rank 0 could not write the manifest: " + c.error;
  } else {
    c.ok = out->ok = true;
    c.bytes = out->bytes = shardBytes(shards);
    c.path = out->path;
    if (Status st = store_.applyRetention(config_.keep, config_.job, out->step); !st.isOk()) {
      DDP_LOG(Warning) << "checkpoint retention: " << st;
    }
    auto own = store_.ownCommittedSteps(config_.job);
    if (own.isOk()) {
      auto detail = listCommitted(store_, config_.job.name);
      if (detail.isOk()) {
        for (const CommittedCheckpoint& d : *detail) {
          if (std::find(own->begin(), own->end(), d.step) != own->end()) c.onDiskDetail.push_back(d);
        }
      }
      c.onDisk = std::move(*own);
    }
  }
  if (Status st = channel_.reportCommit(out->step, c, Deadline::after(config_.requestTimeout)); !st.isOk()) {
    // The MANIFEST is the commit point; the controller's catalog catches up with the next one.
    DDP_LOG(Warning) << "checkpoint step " << out->step << ": the commit report did not reach the controller: " << st;
  }
}

}  // namespace ddp::runtime
