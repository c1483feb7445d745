#include "controller/store/job_record_json.h"

#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace ddp::controller {

namespace {

using nlohmann::json;

json encodeDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// Throws json::type_error (caught by decode()) for anything but a number or the three names.
double decodeDouble(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  throw json::type_error::create(302, "expected a number, \"NaN\" or \"Infinity\", got " + j.dump(-1, ' ', false, json::error_handler_t::replace),
                                 &j);
}

double doubleField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? 0.0 : decodeDouble(*it);
}

// Parses `text` and runs `fromJson` on it; every nlohmann exception becomes InvalidArgument
// (no exception leaves this file).
template <typename T, typename F>
Result<T> decode(std::string_view text, const char* what, F fromJson) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(std::string(what) + ": not valid JSON");
  try {
    return fromJson(j);
  } catch (const json::exception& e) {
    return invalidArgument(std::string(what) + ": " + e.what());
  }
}

const json& requireArray(const json& j) {
  if (!j.is_array()) throw json::type_error::create(302, "expected an array", &j);
  return j;
}

const json& requireObject(const json& j) {
  if (!j.is_object()) throw json::type_error::create(302, "expected an object", &j);
  return j;
}

}  // namespace

std::string conditionsToJson(const std::vector<JobCondition>& conditions) {
  json out = json::array();
  for (const JobCondition& c : conditions) {
    out.push_back({{"type", c.type},
                   {"status", c.status},
                   {"reason", c.reason},
                   {"message", c.message},
                   {"lastTransitionMs", c.lastTransitionMs}});
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string workersToJson(const std::vector<WorkerRecord>& workers) {
  json out = json::array();
  for (const WorkerRecord& w : workers) {
    out.push_back({{"rank", w.rank},
                   {"id", w.id},
                   {"host", w.host},
                   {"advertiseAddress", w.advertiseAddress},
                   {"pid", w.pid},
                   {"pidStartTime", w.pidStartTime},
                   {"state", w.state},
                   {"lastHeartbeatMs", w.lastHeartbeatMs},
                   {"step", w.step}});
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string progressToJson(const JobProgress& p) {
  json out = {{"step", p.step},
              {"totalSteps", p.totalSteps},
              {"epoch", p.epoch},
              {"epochs", p.epochs},
              {"loss", encodeDouble(p.loss)},
              {"samplesPerSecond", encodeDouble(p.samplesPerSecond)},
              {"testAccuracy", p.testAccuracy ? encodeDouble(*p.testAccuracy) : json(nullptr)},
              {"etaSeconds", encodeDouble(p.etaSeconds)}};
  // Language-model figures only when known (a record of another model looks as it always did).
  if (p.valLoss) out["valLoss"] = encodeDouble(*p.valLoss);
  if (p.tokensPerSecond) out["tokensPerSecond"] = encodeDouble(*p.tokensPerSecond);
  if (p.mfu) out["mfu"] = encodeDouble(*p.mfu);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<JobCondition>> conditionsFromJson(std::string_view text) {
  return decode<std::vector<JobCondition>>(text, "conditions", [](const json& j) {
    std::vector<JobCondition> out;
    for (const json& e : requireArray(j)) {
      requireObject(e);
      JobCondition c;
      c.type = e.value("type", std::string());
      c.status = e.value("status", true);
      c.reason = e.value("reason", std::string());
      c.message = e.value("message", std::string());
      c.lastTransitionMs = e.value("lastTransitionMs", int64_t{0});
      out.push_back(std::move(c));
    }
    return out;
  });
}

Result<std::vector<WorkerRecord>> workersFromJson(std::string_view text) {
  return decode<std::vector<WorkerRecord>>(text, "workers", [](const json& j) {
    std::vector<WorkerRecord> out;
    for (const json& e : requireArray(j)) {
      requireObject(e);
      WorkerRecord w;
      w.rank = e.value("rank", -1);
      w.id = e.value("id", std::string());
      w.host = e.value("host", std::string());
      w.advertiseAddress = e.value("advertiseAddress", std::string());
      w.pid = e.value("pid", int64_t{0});
      w.pidStartTime = e.value("pidStartTime", int64_t{0});
      w.state = e.value("state", std::string());
      w.lastHeartbeatMs = e.value("lastHeartbeatMs", int64_t{0});
      w.step = e.value("step", int64_t{0});
      out.push_back(std::move(w));
    }
    return out;
  });
}

Result<JobProgress> progressFromJson(std::string_view text) {
  return decode<JobProgress>(text, "progress", [](const json& j) {
    requireObject(j);
    JobProgress p;
    p.step = j.value("step", int64_t{0});
    p.totalSteps = j.value("totalSteps", int64_t{0});
    p.epoch = j.value("epoch", int64_t{0});
    p.epochs = j.value("epochs", int64_t{0});
    p.loss = doubleField(j, "loss");
    p.samplesPerSecond = doubleField(j, "samplesPerSecond");
    // Optional figures: absent (a record written before they existed) or null reads as none.
    for (auto [key, out] : {std::pair{"testAccuracy", &p.testAccuracy}, std::pair{"valLoss", &p.valLoss},
                            std::pair{"tokensPerSecond", &p.tokensPerSecond}, std::pair{"mfu", &p.mfu}}) {
      auto it = j.find(key);
      if (it != j.end() && !it->is_null()) *out = decodeDouble(*it);
    }
    p.etaSeconds = doubleField(j, "etaSeconds");
    return p;
  });
}

}  // namespace ddp::controller
