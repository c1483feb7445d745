#include "controller/rendezvous/rendezvous.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace ddp::controller {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Natural order: digit runs compare as numbers ("job-w2" < "job-w10").
bool naturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> keepPodsAdjacent(const std::vector<std::string>& order, const PodOfWorker& podOf) {
  if (!podOf) return order;
  std::map<int, std::vector<std::string>> byPod;
  for (const auto& id : order) {
    if (auto pod = podOf(id)) byPod[*pod].push_back(id);
  }
  for (auto& [pod, ids] : byPod) std::stable_sort(ids.begin(), ids.end(), naturalLess);
  std::vector<std::string> out;
  std::set<int> placed;
  for (const auto& id : order) {
    const std::optional<int> pod = podOf(id);
    if (!pod) {
      out.push_back(id);
    } else if (placed.insert(*pod).second) {
      out.insert(out.end(), byPod[*pod].begin(), byPod[*pod].end());
    }
  }
  return out;
}

Status RendezvousConfig::validate() const {
  if (minWorkers < 1) return invalidArgument("rendezvous: minWorkers must be >= 1, got " + std::to_string(minWorkers));
  if (maxWorkers < minWorkers) {
    return invalidArgument("rendezvous: maxWorkers (" + std::to_string(maxWorkers) + ") must be >= minWorkers (" +
                           std::to_string(minWorkers) + ")");
  }
  if (lastCall < Duration::zero()) return invalidArgument("rendezvous: lastCall must be >= 0");
  return Status::ok();
}

std::optional<int> RendezvousRound::rankOf(const std::string& workerId) const {
  if (rankById_.size() == members.size() && !members.empty()) {
    auto it = rankById_.find(workerId);
    if (it == rankById_.end()) return std::nullopt;
    return it->second;
  }
  auto it = std::find(members.begin(), members.end(), workerId);
  if (it == members.end()) return std::nullopt;
  return static_cast<int>(it - members.begin());
}

void RendezvousRound::index() {
  rankById_.clear();
  for (size_t r = 0; r < members.size(); ++r) rankById_.emplace(members[r], static_cast<int>(r));
}

Rendezvous::Rendezvous(RendezvousConfig config, int64_t lastGeneration)
    : config_(config), lastGeneration_(lastGeneration) {}

Rendezvous Rendezvous::restored(RendezvousConfig config, RendezvousRound active) {
  Rendezvous r(config, active.generation);
  active.index();
  r.active_ = std::move(active);
  return r;
}

int64_t Rendezvous::join(const std::string& workerId, TimePoint now) {
  if (active_) {
    if (active_->rankOf(workerId)) return active_->generation;
    if (!contains(late_, workerId)) late_.push_back(workerId);
    return nextGeneration();
  }
  if (!contains(waiting_, workerId)) waiting_.push_back(workerId);
  if (!openedAt_) openedAt_ = now;
  noteCount(now);
  closeIfComplete(now);
  return active_ ? active_->generation : nextGeneration();
}

void Rendezvous::expect(std::vector<std::string> ids, TimePoint now, Duration wait, bool closeWhenAllJoined) {
  if (active_) return;
  expected_ = std::move(ids);
  expectUntil_ = now + wait;
  expectCloses_ = closeWhenAllJoined;
  closeIfComplete(now);
}

void Rendezvous::closeIfComplete(TimePoint now) {
  if (active_) return;
  const int n = static_cast<int>(waiting_.size());
  if (n >= config_.maxWorkers) return close(now);
  if (expected_.empty() || !expectCloses_ || n < config_.minWorkers) return;
  for (const auto& id : expected_) {
    if (!contains(waiting_, id)) return;
  }
  close(now);
}

void Rendezvous::leave(const std::string& workerId, TimePoint now) {
  std::erase(late_, workerId);
  if (active_) return;
  std::erase(waiting_, workerId);
  if (waiting_.empty()) openedAt_.reset();
  noteCount(now);
  if (std::erase(expected_, workerId) > 0) closeIfComplete(now);
}

void Rendezvous::noteCount(TimePoint now) {
  if (static_cast<int>(waiting_.size()) < config_.minWorkers) {
    minReachedAt_.reset();
  } else if (!minReachedAt_) {
    minReachedAt_ = now;
  }
}

std::optional<TimePoint> Rendezvous::nextDeadline() const {
  if (active_ || !minReachedAt_) return std::nullopt;
  const TimePoint lastCall = *minReachedAt_ + config_.lastCall;
  const bool missing = std::any_of(expected_.begin(), expected_.end(), [&](const std::string& id) { return !contains(waiting_, id); });
  return missing && expectUntil_ ? std::max(lastCall, *expectUntil_) : lastCall;
}

bool Rendezvous::tick(TimePoint now) {
  auto due = nextDeadline();
  if (!due || now < *due) return false;
  close(now);
  return true;
}

void Rendezvous::close(TimePoint now) {
  // Survivors first, in their previous rank order; then newcomers in natural id order.
  std::vector<std::string> order;
  for (const auto& id : previous_) {
    if (contains(waiting_, id)) order.push_back(id);
  }
  std::vector<std::string> newcomers;
  for (const auto& id : waiting_) {
    if (!contains(order, id)) newcomers.push_back(id);
  }
  std::stable_sort(newcomers.begin(), newcomers.end(), naturalLess);
  order.insert(order.end(), newcomers.begin(), newcomers.end());
  order = keepPodsAdjacent(order, config_.podOf);
  RendezvousRound round;
  round.generation = ++lastGeneration_;
  round.closedAt = now;
  round.openedAt = openedAt_.value_or(now);
  openedAt_.reset();
  const size_t take = std::min(order.size(), static_cast<size_t>(config_.maxWorkers));
  round.members.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(take));
  round.index();
  late_.insert(late_.begin(), order.begin() + static_cast<std::ptrdiff_t>(take), order.end());
  waiting_.clear();
  expected_.clear();
  expectUntil_.reset();
  expectCloses_ = true;
  minReachedAt_.reset();
  active_ = std::move(round);
}

void Rendezvous::endGeneration(TimePoint now) {
  if (!active_) return;
  previous_ = active_->members;
  active_.reset();
  waiting_ = std::move(late_);
  late_.clear();
  if (!waiting_.empty()) openedAt_ = now;
  expected_.clear();
  expectUntil_.reset();
  expectCloses_ = true;
  noteCount(now);
  if (static_cast<int>(waiting_.size()) >= config_.maxWorkers) close(now);
}

}  // namespace ddp::controller
