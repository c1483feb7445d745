#include "controller/kubernetes/ddpjob_status.h"

#include <cstdio>
#include <ctime>

#include "controller/launch/kubernetes/worker_objects.h"
#include "controller/store/job_status_json.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// Fields whose change is written at once (Note [Status writes]).
constexpr const char* kUrgent[] = {"phase", "conditions", "readyWorkers", "worldSize", "rendezvousGeneration",
                                   "restarts", "message"};

}  // namespace

json ddpJobStatus(const JobRecord& r, int64_t observedGeneration) {
  int ready = 0, world = 0;
  for (const WorkerRecord& w : r.workers) {
    if (w.rank >= 0) ++world;
    if (w.state == "Running") ++ready;
  }
  // Phase, conditions, progress and times as the REST API's job object shows them (one writer
  // of each: job_status_json.h).
  json s = {{"phase", jobPhaseName(r.phase)},
            {"conditions", conditionsJson(r.conditions)},
            {"readyWorkers", ready},
            // The scale subresource's labelSelectorPath (a HorizontalPodAutoscaler finds the
            // job's worker pods with it).
            {"selector", workerPodSelector(r.name)},
            {"worldSize", world},
            {"rendezvousGeneration", r.generation},
            {"restarts", r.restarts},
            {"progress", progressJson(r.progress)},
            {"observedGeneration", observedGeneration}};
  if (r.startMs != 0) s["startTime"] = rfc3339(r.startMs);
  if (r.completionMs != 0) s["completionTime"] = rfc3339(r.completionMs);
  return s;
}

json invalidJobStatus(const std::string& errors, int64_t observedGeneration, int64_t nowMs) {
  return {{"phase", "Failed"},
          {"message", errors},
          {"observedGeneration", observedGeneration},
          {"conditions", json::array({{{"type", "Valid"}, {"status", "False"}, {"reason", "InvalidSpec"},
                                       {"message", errors}, {"lastTransitionTime", rfc3339(nowMs)}}})}};
}

json withFailure(json status, const std::string& reason, const std::string& message, int64_t atMs) {
  status["phase"] = "Failed";
  status["message"] = message;
  json conditions = json::array();
  for (const json& c : status.value("conditions", json::array())) {
    const std::string type = c.value("type", "");
    if (type == kConditionCancelled || type == kConditionFailed) continue;
    if (type == kConditionRunning && c.value("status", "") == "True") {
      json off = c;
      off["status"] = "False";
      off["reason"] = reason;
      off["message"] = message;
      off["lastTransitionTime"] = rfc3339(atMs);
      conditions.push_back(off);
      continue;
    }
    conditions.push_back(c);
  }
  conditions.push_back({{"type", kConditionFailed}, {"status", "True"}, {"reason", reason}, {"message", message},
                        {"lastTransitionTime", rfc3339(atMs)}});
  status["conditions"] = conditions;
  if (!status.contains("completionTime")) status["completionTime"] = rfc3339(atMs);
  return status;
}

bool finishedBefore(const json& ddpJob) {
  const json& s = ddpJob.value("status", json::object());
  const std::string phase = s.value("phase", "");
  if (phase != "Succeeded" && phase != "Failed" && phase != "Cancelled") return false;
  const int64_t generation = ddpJob.value("metadata", json::object()).value("generation", int64_t{1});
  for (const json& c : s.value("conditions", json::array())) {
    if (c.value("type", "") == "Valid" && c.value("status", "") == "False") {
      return s.value("observedGeneration", int64_t{0}) == generation;  // refused: this spec?
    }
  }
  return true;
}

std::optional<int64_t> parseRfc3339Ms(const std::string& text) {
  int y, mo, d, h, mi, sec, n = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19) {
    return std::nullopt;
  }
  int64_t ms = 0;
  size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    int64_t scale = 100;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, scale /= 10) ms += (text[i] - '0') * scale;
  }
  if (i + 1 != text.size() || text[i] != 'Z') return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

bool statusWriteDue(const json& written, TimePoint writtenAt, const json& desired, TimePoint now) {
  if (written.is_null()) return true;
  if (written == desired) return false;
  for (const char* k : kUrgent) {
    if (written.value(k, json()) != desired.value(k, json())) return true;
  }
  return now - writtenAt >= kStatusInterval;
}

}  // namespace ddp::controller::kube
