#include "controller/jobs/membership/membership.h"

#include <algorithm>

namespace ddp::controller {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

}  // namespace

MembershipDecision decideMembership(const MembershipFacts& f) {
  MembershipDecision d;
  if (!f.running || !f.settled || f.members.empty()) return d;
  const int world = static_cast<int>(f.members.size());
  std::vector<std::string> leaving;
  for (const auto& id : f.members) {
    if (contains(f.retiring, id)) leaving.push_back(id);
  }
  if (!leaving.empty()) {
    d.endGeneration = true;
    d.reason = "ScaledDown";
    d.message = "scaled to " + std::to_string(f.target) + " worker(s): the generation of " + std::to_string(world) +
                " ends without " + joined(leaving);
    return d;
  }
  std::vector<std::string> joiners;
  for (const auto& id : f.lateJoiners) {
    if (!contains(f.retiring, id)) joiners.push_back(id);
  }
  if (joiners.empty() || world >= f.maxWorkers) return d;
  const int room = f.maxWorkers - world;
  const int wanted = std::max(1, std::min(f.target, f.maxWorkers) - world);
  const int coming = std::min(room, static_cast<int>(joiners.size()));
  const bool filled = coming >= wanted;
  const bool gathered = f.firstLateJoinAt && f.now - *f.firstLateJoinAt >= f.gather;
  if (!filled && !gathered) return d;
  joiners.resize(static_cast<size_t>(coming));
  d.endGeneration = true;
  d.reason = "WorkersJoined";
  d.message = joined(joiners) + " joined: the generation of " + std::to_string(world) + " ends so that the next takes " +
              (coming == 1 ? "it" : "them") + " in (" + std::to_string(world + coming) + " of at most " +
              std::to_string(f.maxWorkers) + " workers)";
  return d;
}

Status validateScale(const WorkersSpec& w, int target, int launcherMax, const std::string& field) {
  if (target < w.min || target > w.max) {
    return invalidArgument(field + ": " + std::to_string(target) + " is outside [spec.workers.min, spec.workers.max] = [" +
                           std::to_string(w.min) + ", " + std::to_string(w.max) + "]");
  }
  if (target > launcherMax) {
    return invalidArgument(field + ": " + std::to_string(target) + " is more than the launcher can start (" +
                           std::to_string(launcherMax) + ")");
  }
  if (w.perPod > 1 && target % w.perPod != 0) {  // whole pods only (Note [Several ranks per pod])
    return invalidArgument(field + ": " + std::to_string(target) + " is not a multiple of spec.workers.perPod (" +
                           std::to_string(w.perPod) + " ranks per pod)");
  }
  return Status::ok();
}

std::vector<std::string> retiredBy(const std::vector<std::pair<std::string, int>>& slots, int target) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& s : slots) {
    if (s.second >= target) out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> ids;
  for (const auto& s : out) ids.push_back(s.first);
  return ids;
}

}  // namespace ddp::controller
