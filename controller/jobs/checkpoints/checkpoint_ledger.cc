#include "controller/jobs/checkpoints/checkpoint_ledger.h"

#include <algorithm>

namespace ddp::controller {

const char* commitDecisionName(CommitDecision d) {
  switch (d) {
    case CommitDecision::kPending: return "pending";
    case CommitDecision::kCommit: return "commit";
    case CommitDecision::kAbandon: return "abandon";
  }
  return "pending";
}

void CheckpointLedger::decide(const Key& key, Entry& e, CommitDecision d, std::string reason, TimePoint now,
                              std::vector<LedgerChange>* changes) {
  e.verdict.decision = d;
  e.verdict.reason = std::move(reason);
  e.decidedAt = now;
  decided_.insert(key);
  if (d == CommitDecision::kCommit) {
    e.verdict.shards.clear();
    for (const auto& [rank, r] : e.reports) e.verdict.shards.push_back(r);
  }
  if (changes != nullptr) changes->push_back({key.first, key.second, e.verdict});
}

CheckpointVerdict CheckpointLedger::report(int64_t generation, int64_t step, int worldSize, const ShardReport& r,
                                           TimePoint now, std::vector<LedgerChange>* changes, std::string* problem) {
  const Key key{generation, step};
  if (r.rank < 0 || r.rank >= worldSize) {
    *problem = "rank " + std::to_string(r.rank) + " is not in generation " + std::to_string(generation) + " of " +
               std::to_string(worldSize) + " rank(s)";
    auto it = entries_.find(key);
    return it == entries_.end() ? CheckpointVerdict{} : it->second.verdict;
  }
  auto [it, fresh] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (fresh) {
    e.worldSize = worldSize;
    e.firstReport = now;
  }
  if (e.verdict.decision != CommitDecision::kPending) return e.verdict;  // decided: a late or repeated report
  if (auto prev = e.reports.find(r.rank); prev != e.reports.end()) {
    if (prev->second.ok != r.ok || prev->second.bytes != r.bytes || prev->second.crc != r.crc) {
      *problem = "rank " + std::to_string(r.rank) + " reported step " + std::to_string(step) + " twice, differently";
    }
    return e.verdict;  // a repeated request (the client retries): nothing new
  }
  e.reports[r.rank] = r;
  int64_t& last = lastReported_[{generation, r.rank}];
  last = std::max(last, step);
  abandonSkipped(generation, now, changes);
  if (e.verdict.decision != CommitDecision::kPending) return e.verdict;
  if (!r.ok) {
    decide(key, e, CommitDecision::kAbandon,
           "rank " + std::to_string(r.rank) + " could not write its shard: " + (r.error.empty() ? "no reason given" : r.error),
           now, changes);
  } else if (static_cast<int>(e.reports.size()) == e.worldSize) {
    decide(key, e, CommitDecision::kCommit, "", now, changes);
  }
  return e.verdict;
}

void CheckpointLedger::relearn(int64_t generation, int64_t step, int worldSize, const ShardReport& r, TimePoint now,
                               std::vector<LedgerChange>* changes) {
  if (decided_.count({generation, step}) != 0) return;
  std::string problem;  // a different repeat of a report already held changes nothing
  (void)report(generation, step, worldSize, r, now, changes, &problem);
}

CheckpointVerdict CheckpointLedger::decision(int64_t generation, int64_t step, TimePoint now,
                                             std::vector<LedgerChange>* changes) {
  const Key key{generation, step};
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    // Nothing at all: rank 0's own report was lost with a restarted controller (the Note).
    CheckpointVerdict v;
    v.decision = CommitDecision::kAbandon;
    v.reason = "the controller holds no report for step " + std::to_string(step) + " of generation " +
               std::to_string(generation) + " (it restarted during the checkpoint)";
    Entry& e = entries_[key];
    e.firstReport = now;
    decide(key, e, v.decision, v.reason, now, changes);
    return e.verdict;
  }
  Entry& e = it->second;
  if (e.verdict.decision == CommitDecision::kPending && e.reports.count(0) == 0) {
    decide(key, e, CommitDecision::kAbandon,
           "the controller holds no report of rank 0 for step " + std::to_string(step) +
               " (it restarted during the checkpoint)",
           now, changes);
  }
  return e.verdict;
}

void CheckpointLedger::abandonSkipped(int64_t generation, TimePoint now, std::vector<LedgerChange>* changes) {
  for (auto& [key, e] : entries_) {
    if (key.first != generation || e.verdict.decision != CommitDecision::kPending) continue;
    for (int rank = 0; rank < e.worldSize; ++rank) {
      auto last = lastReported_.find({generation, rank});
      if (e.reports.count(rank) != 0 || last == lastReported_.end() || last->second <= key.second) continue;
      decide(key, e, CommitDecision::kAbandon,
             "rank " + std::to_string(rank) + " reported step " + std::to_string(last->second) + " but never step " +
                 std::to_string(key.second) + " (its report was lost: the controller restarted during the checkpoint)",
             now, changes);
      break;
    }
  }
}

void CheckpointLedger::endGeneration(int64_t generation, const std::string& why, TimePoint now,
                                     std::vector<LedgerChange>* changes) {
  for (auto& [key, e] : entries_) {
    if (key.first > generation || e.verdict.decision != CommitDecision::kPending) continue;
    decide(key, e, CommitDecision::kAbandon, "generation " + std::to_string(key.first) + " ended: " + why,
           now, changes);
  }
  std::erase_if(lastReported_, [&](const auto& kv) { return kv.first.first <= generation; });
  std::erase_if(decided_, [&](const Key& k) { return k.first < generation; });
}

void CheckpointLedger::expire(TimePoint now, std::vector<LedgerChange>* changes) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.verdict.decision == CommitDecision::kPending && now - e.firstReport >= config_.commitTimeout) {
      std::string missing;
      for (int r = 0; r < e.worldSize; ++r) {
        if (e.reports.count(r) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      const double secs = std::chrono::duration<double>(config_.commitTimeout).count();
      decide(it->first, e, CommitDecision::kAbandon,
             "rank(s) " + missing + " did not report within " + std::to_string(static_cast<int64_t>(secs)) + " s",
             now, changes);
    }
    if (e.verdict.decision != CommitDecision::kPending && now - e.decidedAt >= config_.forgetAfter) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ddp::controller
