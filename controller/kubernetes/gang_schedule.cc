#include "controller/kubernetes/gang_schedule.h"

#include <algorithm>
#include <cstdlib>

#include "controller/launch/kubernetes/worker_objects.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

bool scheduled(const std::string& phase) { return phase == "Running" || phase == "Succeeded" || phase == "Failed"; }

std::string seconds(int64_t ms) { return std::to_string(ms / 1000) + "s"; }

}  // namespace

PodSchedule podScheduleOf(const json& pod) {
  PodSchedule p;
  const json& meta = pod.value("metadata", json::object());
  const json& status = pod.value("status", json::object());
  p.name = meta.value("name", "");
  p.uid = meta.value("uid", "");
  const json& labels = meta.value("labels", json::object());
  if (labels.contains(kSlotLabel) && labels[kSlotLabel].is_string()) {
    const std::string slot = labels[kSlotLabel].get<std::string>();
    char* end = nullptr;
    const long v = std::strtol(slot.c_str(), &end, 10);
    if (!slot.empty() && *end == '\0' && v >= 0 && v <= 1'000'000) p.slot = static_cast<int>(v);
  }
  p.terminating = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  p.phase = status.value("phase", "");
  const json& gates = pod.value("spec", json::object()).value("schedulingGates", json::array());
  p.gated = gates.is_array() && !gates.empty();
  bool podScheduled = false;
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") != "PodScheduled") continue;
    podScheduled = c.value("status", "") == "True";
    if (!podScheduled) {
      p.reason = c.value("reason", "");
      p.message = c.value("message", "");
    }
  }
  if (podScheduled) {
    for (const json& cs : status.value("containerStatuses", json::array())) {
      const json& waiting = cs.value("state", json::object()).value("waiting", json::object());
      if (waiting.contains("reason")) {
        p.reason = waiting.value("reason", "");
        p.message = waiting.value("message", "");
        break;
      }
    }
  }
  return p;
}

GangVerdict decideGang(const std::vector<PodSchedule>& pods, int64_t nowMs, int64_t timeoutMs) {
  GangVerdict v;
  bool any = false, timedOut = false;
  for (const PodSchedule& p : pods) {
    if (p.terminating) continue;
    any = true;
    if (scheduled(p.phase)) continue;
    if (p.gated) {
      v.gated.push_back(p);  // not the scheduler's yet: no timeout (Note [Schedule timeout])
      continue;
    }
    v.notRunning.push_back(p);
    timedOut = timedOut || nowMs - p.sinceMs >= timeoutMs;
  }
  if (!any) {
    v.state = GangState::kWaiting;
    return v;
  }
  if (v.notRunning.empty() && v.gated.empty()) return v;
  if (!timedOut) {
    v.state = GangState::kWaiting;
    return v;
  }
  v.state = GangState::kTimedOut;
  std::sort(v.notRunning.begin(), v.notRunning.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  int64_t oldest = nowMs;
  for (const PodSchedule& p : v.notRunning) oldest = std::min(oldest, p.sinceMs);
  v.message = std::to_string(v.notRunning.size()) + " worker pod(s) not running after " + seconds(nowMs - oldest) +
              " (scheduleTimeoutSeconds " + std::to_string(timeoutMs / 1000) + "):";
  for (size_t i = 0; i < v.notRunning.size(); ++i) {
    const PodSchedule& p = v.notRunning[i];
    v.message += (i == 0 ? " " : "; ") + p.name + " " + (p.phase.empty() ? "Pending" : p.phase);
    if (!p.reason.empty() || !p.message.empty()) {
      v.message += " (" + p.reason + (p.reason.empty() || p.message.empty() ? "" : ": ") + p.message + ")";
    }
  }
  return v;
}

}  // namespace ddp::controller::kube
