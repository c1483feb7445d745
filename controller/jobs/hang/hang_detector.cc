#include "controller/jobs/hang/hang_detector.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace ddp::controller {
namespace {

double secondsBetween(TimePoint a, TimePoint b) { return std::chrono::duration<double>(b - a).count(); }

std::string fixed1(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += i + 1 == ranks.size() ? " and " : ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

std::string ranksWord(const std::vector<int>& ranks) { return ranks.size() == 1 ? "rank " : "ranks "; }

const CollectiveView* viewOf(const MemberHealth& m, const std::string& backend) {
  for (const auto& c : m.collectives) {
    if (c.backend == backend) return &c;
  }
  return nullptr;
}

bool responsive(const MemberHealth& m, const HangConfig& c, TimePoint now) {
  return !m.exitedWithFailure && now - m.lastHeartbeat <= c.heartbeatWindow;
}

// The oldest unfinished collective among heartbeating members, with its age now.
struct Stuck {
  const MemberHealth* member = nullptr;
  const CollectiveView* view = nullptr;
  double age = 0;
};

std::optional<Stuck> oldestStuck(const std::vector<MemberHealth>& members, const HangConfig& c, TimePoint now) {
  std::optional<Stuck> best;
  for (const auto& m : members) {
    if (m.finished || !responsive(m, c, now)) continue;
    for (const auto& v : m.collectives) {
      if (v.seq < 0) continue;
      const double age = v.seconds + std::max(0.0, secondsBetween(m.lastHeartbeat, now));
      if (!best || age > best->age) best = Stuck{&m, &v, age};
    }
  }
  return best;
}

// Ranks that never issued `seq` on `backend`, and ranks waiting in it.
void blame(const std::vector<MemberHealth>& members, const std::string& backend, int64_t seq,
           std::vector<int>* behind, std::vector<int>* waiting) {
  for (const auto& m : members) {
    if (m.finished) continue;
    const CollectiveView* v = viewOf(m, backend);
    if (v == nullptr || v->issued < seq) {
      behind->push_back(m.rank);
    } else if (v->seq == seq) {
      waiting->push_back(m.rank);
    }
  }
}

}  // namespace

const char* faultReasonName(FaultReason r) {
  switch (r) {
    case FaultReason::kExited: return "Exited";
    case FaultReason::kUnresponsive: return "Unresponsive";
    case FaultReason::kCollectiveStuck: return "CollectiveStuck";
    case FaultReason::kNoProgress: return "NoProgress";
    case FaultReason::kCollectiveFailed: return "CollectiveFailed";
  }
  return "Unknown";
}

namespace {

// Exited: the earliest failed exit.
std::optional<HangVerdict> exitedVerdict(const std::vector<MemberHealth>& members) {
  const MemberHealth* exited = nullptr;
  for (const auto& m : members) {
    if (m.exitedWithFailure && (exited == nullptr || m.exitedAt < exited->exitedAt)) exited = &m;
  }
  if (exited == nullptr) return std::nullopt;
  HangVerdict v{FaultReason::kExited, {exited->rank}, {}, exited->exitMessage};
  if (v.message.empty()) v.message = "worker rank " + std::to_string(exited->rank) + " exited";
  return v;
}

std::optional<HangVerdict> unresponsiveVerdict(const std::vector<MemberHealth>& members, const HangConfig& c,
                                               TimePoint now) {
  std::vector<int> silent;
  double silentFor = 0;
  std::string ids;
  for (const auto& m : members) {
    if (m.finished || now - m.lastHeartbeat <= c.heartbeatWindow) continue;
    silent.push_back(m.rank);
    silentFor = std::max(silentFor, secondsBetween(m.lastHeartbeat, now));
    ids += (ids.empty() ? "" : ", ") + m.workerId;
  }
  if (silent.empty()) return std::nullopt;
  HangVerdict v{FaultReason::kUnresponsive, silent, {}, ""};
  v.message = "worker " + ranksWord(silent) + rankList(silent) + " (" + ids + ") sent no heartbeat for " +
              fixed1(silentFor) + " s (stopped, frozen or cut off)";
  return v;
}

// CollectiveStuck past `hang`; below it, past half of it, the ranks behind as stragglers.
std::optional<HangVerdict> stuckVerdict(const std::vector<MemberHealth>& members, const HangConfig& c, TimePoint now,
                                        std::vector<Straggler>* stragglers) {
  auto stuck = oldestStuck(members, c, now);
  if (!stuck) return std::nullopt;
  const double hang = std::chrono::duration<double>(c.hang).count();
  std::vector<int> behind, waiting;
  blame(members, stuck->view->backend, stuck->view->seq, &behind, &waiting);
  const std::string what = stuck->view->op + " #" + std::to_string(stuck->view->seq) + " (" + stuck->view->backend + ")";
  if (stuck->age > hang) {
    HangVerdict v{FaultReason::kCollectiveStuck, behind, waiting, ""};
    if (!behind.empty()) {
      v.message = ranksWord(behind) + rankList(behind) + " never reached " + what + ", which " + ranksWord(waiting) +
                  rankList(waiting) + (waiting.size() == 1 ? " has" : " have") + " waited in for " +
                  fixed1(stuck->age) + " s";
    } else {
      v.message = "every rank reached " + what + " but it has not finished after " + fixed1(stuck->age) +
                  " s (a transport fault): every rank aborts and rejoins";
    }
    return v;
  }
  if (stuck->age > hang / 2) {
    for (int r : behind) {
      stragglers->push_back({r, stuck->view->backend, stuck->view->seq,
                             "rank " + std::to_string(r) + " is behind: " + ranksWord(waiting) + rankList(waiting) +
                                 " waited " + fixed1(stuck->age) + " s for it in " + what});
    }
  }
  return std::nullopt;
}

std::optional<HangVerdict> noProgressVerdict(const std::vector<MemberHealth>& members, const HangConfig& c,
                                             TimePoint generationStart, TimePoint now) {
  const double progress = std::chrono::duration<double>(c.progress).count();
  bool anyActive = false, allStalled = true;
  int64_t lowest = INT64_MAX, highest = INT64_MIN;
  double stalledFor = 0;
  for (const auto& m : members) {
    if (m.finished) continue;
    anyActive = true;
    const double since = secondsBetween(std::max(m.stepChangedAt, generationStart), now);
    allStalled = allStalled && since > progress;
    stalledFor = std::max(stalledFor, since);
    lowest = std::min(lowest, m.step);
    highest = std::max(highest, m.step);
  }
  if (!anyActive || !allStalled) return std::nullopt;
  std::vector<int> culprits;
  if (lowest != highest) {
    for (const auto& m : members) {
      if (!m.finished && m.step == lowest) culprits.push_back(m.rank);
    }
  }
  HangVerdict v{FaultReason::kNoProgress, culprits, {}, ""};
  v.message = "no step finished for " + fixed1(stalledFor) + " s" +
              (culprits.empty() ? " on any rank (all at step " + std::to_string(lowest) + ")"
                                : "; " + ranksWord(culprits) + rankList(culprits) + " at step " +
                                      std::to_string(lowest) + ", others at up to " + std::to_string(highest));
  return v;
}

// CollectiveFailed: a member left on its own and no exit explained it within `settle`.
std::optional<HangVerdict> leftVerdict(const std::vector<MemberHealth>& members, const HangConfig& c, TimePoint now) {
  const MemberHealth* left = nullptr;
  for (const auto& m : members) {
    if (m.leftOnItsOwn && (left == nullptr || m.leftAt < left->leftAt)) left = &m;
  }
  if (left == nullptr || now - left->leftAt < c.settle) return std::nullopt;
  HangVerdict v{FaultReason::kCollectiveFailed, {}, {}, ""};
  v.message = "worker rank " + std::to_string(left->rank) + " (" + left->workerId +
              ") aborted its communicator: " + left->leftMessage;
  return v;
}

}  // namespace

HangReport detectHang(const std::vector<MemberHealth>& members, const HangConfig& c, TimePoint generationStart,
                      TimePoint now) {
  // In this order (Note [Hang verdicts]): the first that applies is the verdict.
  HangReport out;
  out.verdict = exitedVerdict(members);
  if (!out.verdict) out.verdict = unresponsiveVerdict(members, c, now);
  if (!out.verdict) out.verdict = stuckVerdict(members, c, now, &out.stragglers);
  if (!out.verdict) out.verdict = noProgressVerdict(members, c, generationStart, now);
  if (!out.verdict) out.verdict = leftVerdict(members, c, now);
  return out;
}

}  // namespace ddp::controller
