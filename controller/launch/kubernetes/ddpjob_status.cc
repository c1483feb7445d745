#include "controller/launch/kubernetes/ddpjob_status.h"

#include "controller/api/job_json.h"
#include "controller/launch/kubernetes/worker_objects.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// Fields whose change is written at once (Note [Status writes]).
constexpr const char* kUrgent[] = {"phase", "conditions", "readyWorkers", "worldSize", "rendezvousGeneration",
                                   "restarts", "message"};

}  // namespace

json ddpJobStatus(const JobRecord& r, int64_t observedGeneration) {
  // The REST API's job object has the same progress and conditions: one conversion.
  const json api = json::parse(jobJson(r))["status"];
  int ready = 0, world = 0;
  for (const WorkerRecord& w : r.workers) {
    if (w.rank >= 0) ++world;
    if (w.state == "Running") ++ready;
  }
  json s = {{"phase", api["phase"]},
            {"conditions", api["conditions"]},
            {"readyWorkers", ready},
            // The scale subresource's labelSelectorPath (a HorizontalPodAutoscaler finds the
            // job's worker pods with it).
            {"selector", workerPodSelector(r.name)},
            {"worldSize", world},
            {"rendezvousGeneration", r.generation},
            {"restarts", r.restarts},
            {"progress", api["progress"]},
            {"observedGeneration", observedGeneration}};
  if (!api["startTime"].is_null()) s["startTime"] = api["startTime"];
  if (!api["completionTime"].is_null()) s["completionTime"] = api["completionTime"];
  return s;
}

json invalidJobStatus(const std::string& errors, int64_t observedGeneration, int64_t nowMs) {
  return {{"phase", "Failed"},
          {"message", errors},
          {"observedGeneration", observedGeneration},
          {"conditions", json::array({{{"type", "Valid"}, {"status", "False"}, {"reason", "InvalidSpec"},
                                       {"message", errors}, {"lastTransitionTime", rfc3339(nowMs)}}})}};
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
