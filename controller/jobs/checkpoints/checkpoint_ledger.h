#pragma once
// CheckpointLedger: the controller's side of the two-phase checkpoint commit (pure: state,
// reports and an injected time; no I/O). One ledger per job.
//
// Note [Two-phase checkpoint commit]
// Phase 1: at a checkpoint step every rank of the generation snapshots its state into memory
// (the step stalls only for that), writes its shard in the background, and reports
// (generation, step, rank, ok, bytes, CRC-32 of the shard file) to the controller.
// Phase 2: when every rank of that generation reported success, the decision is Commit and
// rank 0 (which polls the decision after its own report) writes the MANIFEST from the reported
// sizes and checksums; the MANIFEST, written last and atomically, stays the commit point on
// disk, so the controller never needs the checkpoint volume and `ddpctl run` resumes from the
// directory alone. Rank 0 then reports the commit (with the steps on disk after retention:
// the controller's catalog follows the disk).
// The decision is Abandon, and no MANIFEST is ever written, when:
//  - a rank reports that it could not write its shard (the job goes on; the checkpoint is a
//    dead partial that retention removes later);
//  - the generation ends first (a verdict, a membership change);
//  - not every rank reported within `commitTimeout` of the first report;
//  - rank 0 asks about a checkpoint whose rank-0 report the ledger does not hold (the
//    controller restarted in between and lost phase 1: Note [Controller state and
//    persistence]); rank 0 always reports before it asks;
//  - a rank reports a later step of the same generation without having reported this one: its
//    report of this one was lost (a controller restart between two ranks' reports). A rank
//    writes its shards one after another and reports each when written, so its reports arrive in
//    step order. Without this, rank 0 (waiting for the decision before its next checkpoint)
//    blocked until commitTimeout and was blamed by the hang detector. Every heartbeat repeats
//    the last report the rank delivered (relearn()), so a controller restarted after a rank
//    reported its latest checkpoint learns it again: the checkpoints before it that the rank
//    never reported (to this controller) are abandoned, and the latest one can still commit.
// A decision once made never changes; decided entries are forgotten after `forgetAfter`.
// Thread model: not thread-safe; the JobManager calls it under its mutex.

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/protocol/controller_messages.h"

namespace ddp::controller {

// One rank's phase-1 report (common/protocol/controller_messages.h).
using protocol::ShardReport;

enum class CommitDecision { kPending, kCommit, kAbandon };
const char* commitDecisionName(CommitDecision d);

struct CheckpointVerdict {
  CommitDecision decision = CommitDecision::kPending;
  std::string reason;               // kAbandon: why
  std::vector<ShardReport> shards;  // kCommit: every rank's report, by rank
};

// What changed with one call, for the caller to turn into events and metrics.
struct LedgerChange {
  int64_t generation = 0;
  int64_t step = 0;
  CheckpointVerdict verdict;  // kCommit or kAbandon: the decision just made
};

struct LedgerConfig {
  Duration commitTimeout = std::chrono::seconds(300);  // first report -> every rank reported
  Duration forgetAfter = std::chrono::seconds(600);    // a decided entry is kept this long
};

class CheckpointLedger {
 public:
  explicit CheckpointLedger(LedgerConfig config = {}) : config_(config) {}

  // A rank's phase-1 report for (generation, step) of a generation of `worldSize` ranks.
  // InvalidArgument-style problems (rank outside the world, a second different report from the
  // same rank) are answered with the entry's verdict unchanged and `*problem` set.
  CheckpointVerdict report(int64_t generation, int64_t step, int worldSize, const ShardReport& r, TimePoint now,
                           std::vector<LedgerChange>* changes, std::string* problem);
  // A report a rank's heartbeat repeats (the last one it delivered): recorded as report() does
  // unless the checkpoint was decided before, here (forgotten or not). A controller restarted
  // since it was first sent learns it again.
  void relearn(int64_t generation, int64_t step, int worldSize, const ShardReport& r, TimePoint now,
               std::vector<LedgerChange>* changes);
  // Rank 0's question. An entry without rank 0's report is abandoned (see the Note).
  CheckpointVerdict decision(int64_t generation, int64_t step, TimePoint now, std::vector<LedgerChange>* changes);
  // Abandons every pending checkpoint of generations up to and including `generation`.
  void endGeneration(int64_t generation, const std::string& why, TimePoint now, std::vector<LedgerChange>* changes);
  // Abandons pending checkpoints past commitTimeout; forgets old decided ones.
  void expire(TimePoint now, std::vector<LedgerChange>* changes);

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int worldSize = 0;
    TimePoint firstReport{};
    TimePoint decidedAt{};
    std::map<int, ShardReport> reports;
    CheckpointVerdict verdict;
  };
  using Key = std::pair<int64_t, int64_t>;  // (generation, step)

  void decide(const Key& key, Entry& e, CommitDecision d, std::string reason, TimePoint now,
              std::vector<LedgerChange>* changes);
  // Abandons the pending checkpoints of `generation` that a rank skipped: it reported a later
  // step without reporting theirs (in either order of arrival).
  void abandonSkipped(int64_t generation, TimePoint now, std::vector<LedgerChange>* changes);

  LedgerConfig config_;
  std::map<Key, Entry> entries_;
  std::map<std::pair<int64_t, int>, int64_t> lastReported_;  // (generation, rank) -> its latest step reported
  std::set<Key> decided_;  // every decision of the live generations (entries_ forgets them)
};

}  // namespace ddp::controller
