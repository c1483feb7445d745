#include "controller/jobs/hang/flight_records.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace ddp::controller {
namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// The oldest unfinished op of a received record; nullptr when none.
const FlightOp* oldestUnfinished(const RankFlightRecord& r) {
  const FlightOp* best = nullptr;
  for (const auto& op : r.ops) {
    if (op.unfinished() && (best == nullptr || op.seq < best->seq)) best = &op;
  }
  return best;
}

// The last op the rank issued, as far as the controller knows (-1: none known).
int64_t lastIssued(const RankFlightRecord& r, const std::string& backend) {
  int64_t last = -1;
  for (const auto& op : r.ops) {
    if (op.backend == backend || op.backend.empty()) last = std::max(last, op.seq);
  }
  for (const auto& c : r.lastHeartbeat) {
    if (c.backend == backend || c.backend.empty()) last = std::max(last, c.issued);
  }
  return last;
}

}  // namespace

std::string formatBytes(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1000) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else if (b < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  } else if (b < 1e9) {
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  }
  return buf;
}

std::string summarizeFlightRecords(const FlightRecordEvent& e) {
  // The stuck op: the oldest unfinished one among the ranks that sent a record.
  std::optional<FlightOp> stuck;
  for (const auto& r : e.ranks) {
    if (const FlightOp* op = oldestUnfinished(r); op != nullptr && (!stuck || op->seq < stuck->seq)) stuck = *op;
  }
  if (!stuck) {
    size_t received = 0;
    for (const auto& r : e.ranks) received += r.status == "received" ? 1 : 0;
    return received == 0 ? "no rank's flight record arrived"
                          : "no rank was inside a collective (" + std::to_string(received) + " record(s))";
  }
  std::vector<int> behind, waiting;
  double waited = 0;
  for (const auto& r : e.ranks) {
    const FlightOp* op = oldestUnfinished(r);
    if (op != nullptr && op->seq == stuck->seq && op->backend == stuck->backend) {
      waiting.push_back(r.rank);
      waited = std::max(waited, op->issuedSecondsAgo);
    } else if (lastIssued(r, stuck->backend) < stuck->seq) {
      behind.push_back(r.rank);
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", waited);
  const std::string what = stuck->op + " #" + std::to_string(stuck->seq) + " (" + formatBytes(stuck->bytes) + ")";
  std::string out;
  if (!behind.empty()) out = rankList(behind) + " never reached " + what + "; ";
  out += rankList(waiting) + " waiting in " + (behind.empty() ? what : "it") + " for " + secs;
  return out;
}

}  // namespace ddp::controller
