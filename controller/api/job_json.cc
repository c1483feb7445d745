#include "controller/api/job_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "controller/store/job_status_json.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

// YAML scalars carry no type: booleans, integers and finite numbers become JSON numbers and
// booleans, everything else a string (toYaml() writes plain scalars, so this is exact for it).
json scalarJson(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  if (s.empty()) return s;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) return i;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (*end == '\0' && errno == 0 && std::isfinite(d) && s.find_first_of("0123456789") != std::string::npos) return d;
  return s;
}

json yamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = yamlToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yamlToJson(e));
      return a;
    }
    case YAML::NodeType::Scalar:
      // Quoted scalars stay strings.
      return n.Tag() == "!" ? json(n.Scalar()) : scalarJson(n.Scalar());
    default:
      return nullptr;
  }
}

json jobObject(const JobRecord& r) {
  json spec = json::object();
  json labels = json::object();
  try {
    YAML::Node doc = YAML::Load(r.specYaml);
    if (doc["spec"]) spec = yamlToJson(doc["spec"]);
    if (doc["metadata"] && doc["metadata"]["labels"]) labels = yamlToJson(doc["metadata"]["labels"]);
  } catch (const YAML::Exception&) {
    // A stored spec always parses; leave it empty rather than fail the whole listing.
  }
  json workers = json::array();
  int worldSize = 0;  // the current (or last) generation's members
  for (const auto& w : r.workers) {
    if (w.rank >= 0) ++worldSize;
    workers.push_back({{"rank", w.rank}, {"id", w.id}, {"host", w.host}, {"pid", w.pid}, {"state", w.state},
                       {"lastHeartbeat", timeOrNull(w.lastHeartbeatMs)}, {"step", w.step}});
  }
  json status = {{"phase", jobPhaseName(r.phase)},
                 {"conditions", conditionsJson(r.conditions)},
                 {"startTime", timeOrNull(r.startMs)},
                 {"completionTime", timeOrNull(r.completionMs)},
                 {"generation", r.generation},
                 {"restarts", r.restarts},
                 {"worldSize", worldSize},
                 {"workers", workers},
                 {"progress", progressJson(r.progress)}};
  json metadata = {{"name", r.name}, {"uid", r.uid}, {"creationTimestamp", rfc3339(r.createdMs)}, {"labels", labels}};
  return {{"apiVersion", kJobApiVersion}, {"kind", kJobKind}, {"metadata", metadata}, {"spec", spec}, {"status", status}};
}

}  // namespace

std::string jobJson(const JobRecord& record) { return jobObject(record).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string jobListJson(const std::vector<JobRecord>& records) {
  json jobs = json::array();
  for (const auto& r : records) jobs.push_back(jobObject(r));
  return json{{"jobs", jobs}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string eventsJson(const std::vector<JobEvent>& events) {
  json a = json::array();
  for (const auto& e : events) {
    a.push_back({{"time", rfc3339(e.timeMs)}, {"type", e.type}, {"reason", e.reason}, {"message", e.message}});
  }
  return json{{"events", a}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string checkpointsJson(const std::vector<CheckpointRecord>& checkpoints) {
  json a = json::array();
  for (const auto& c : checkpoints) {
    a.push_back({{"step", c.step}, {"time", rfc3339(c.timeMs)}, {"bytes", c.bytes}, {"worldSize", c.worldSize},
                 {"path", c.path}});
  }
  return json{{"checkpoints", a}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string specErrorsJson(const std::string& error, const std::vector<SpecError>& errors) {
  json details = json::array();
  for (const auto& e : errors) {
    details.push_back({{"path", e.path}, {"message", e.message}, {"line", e.line}, {"column", e.column}});
  }
  return json{{"error", error}, {"details", details}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ddp::controller
