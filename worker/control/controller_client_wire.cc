// The JSON codecs of controller_client.h (docs/API.md, "Worker routes"). Pure functions; no
// exception leaves this file (parsing without exceptions, every field checked before use,
// invalid UTF-8 replaced when encoding).
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "worker/control/controller_client.h"

namespace ddp::runtime {
namespace {

using Json = nlohmann::json;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Result<Json> parseObject(std::string_view text, const char* what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(std::string(what) + ": not valid JSON");
  if (!j.is_object()) return invalidArgument(std::string(what) + ": not a JSON object");
  return j;
}

// Field readers: `required` fields must be present; a present field must have the right type.
class Fields {
 public:
  Fields(const Json& object, std::string where) : o_(object), where_(std::move(where)) {}

  Status getInt(const char* key, int64_t* out, bool required = true) const {
    const Json* v = find(key);
    if (v == nullptr) return missing(key, required);
    if (!v->is_number_integer()) return wrong(key, "an integer");
    *out = v->get<int64_t>();
    return Status::ok();
  }
  Status getInt(const char* key, int* out, bool required = true) const {
    int64_t v = *out;
    DDP_RETURN_IF_ERROR(getInt(key, &v, required));
    *out = static_cast<int>(v);
    return Status::ok();
  }
  // null reads as NaN.
  Status getDouble(const char* key, double* out, bool required = true) const {
    const Json* v = find(key);
    if (v == nullptr) return missing(key, required);
    if (v->is_null()) {
      *out = std::nan("");
      return Status::ok();
    }
    if (!v->is_number()) return wrong(key, "a number");
    *out = v->get<double>();
    return Status::ok();
  }
  Status getString(const char* key, std::string* out, bool required = true) const {
    const Json* v = find(key);
    if (v == nullptr) return missing(key, required);
    if (!v->is_string()) return wrong(key, "a string");
    *out = v->get<std::string>();
    return Status::ok();
  }
  // Absent or null: left as it is (an older worker's report has no such field).
  Status getOptionalDouble(const char* key, std::optional<double>* out) const {
    const Json* v = find(key);
    if (v == nullptr || v->is_null()) return Status::ok();
    double d = 0;
    DDP_RETURN_IF_ERROR(getDouble(key, &d));
    *out = d;
    return Status::ok();
  }
  // nullptr when absent or null.
  const Json* object(const char* key) const {
    const Json* v = find(key);
    return v != nullptr && v->is_object() ? v : nullptr;
  }
  const Json* array(const char* key) const {
    const Json* v = find(key);
    return v != nullptr && v->is_array() ? v : nullptr;
  }
  std::string at(const char* key) const { return where_ + "." + key; }

 private:
  const Json* find(const char* key) const {
    auto it = o_.find(key);
    return it == o_.end() ? nullptr : &*it;
  }
  Status missing(const char* key, bool required) const {
    return required ? invalidArgument(at(key) + ": missing") : Status::ok();
  }
  Status wrong(const char* key, const char* expected) const {
    return invalidArgument(at(key) + ": expected " + expected);
  }
  const Json& o_;
  std::string where_;
};

Json encodeCounters(const HeartbeatCounters& c) {
  return Json{{"samples", c.samples},
              {"steps", c.steps},
              {"stepSeconds", number(c.stepSeconds)},
              {"commBytes", c.commBytes},
              {"commExposedSeconds", number(c.commExposedSeconds)},
              {"compressionUncompressedBytes", c.compressionUncompressedBytes},
              {"compressionSentBytes", c.compressionSentBytes}};
}

Status decodeCounters(const Fields& f, HeartbeatCounters* c) {
  DDP_RETURN_IF_ERROR(f.getInt("samples", &c->samples, false));
  DDP_RETURN_IF_ERROR(f.getInt("steps", &c->steps, false));
  DDP_RETURN_IF_ERROR(f.getDouble("stepSeconds", &c->stepSeconds, false));
  DDP_RETURN_IF_ERROR(f.getInt("commBytes", &c->commBytes, false));
  DDP_RETURN_IF_ERROR(f.getDouble("commExposedSeconds", &c->commExposedSeconds, false));
  DDP_RETURN_IF_ERROR(f.getInt("compressionUncompressedBytes", &c->compressionUncompressedBytes, false));
  return f.getInt("compressionSentBytes", &c->compressionSentBytes, false);
}

Status decodeCollectives(const Json& array, const std::string& where, std::vector<CollectiveInFlight>* out) {
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_object()) return invalidArgument(where + "[" + std::to_string(i) + "]: expected an object");
    Fields f(array[i], where + "[" + std::to_string(i) + "]");
    CollectiveInFlight c;
    DDP_RETURN_IF_ERROR(f.getString("backend", &c.backend));
    DDP_RETURN_IF_ERROR(f.getInt("seq", &c.seq));
    DDP_RETURN_IF_ERROR(f.getInt("issued", &c.issued, false));
    DDP_RETURN_IF_ERROR(f.getString("op", &c.op));
    DDP_RETURN_IF_ERROR(f.getInt("bytes", &c.bytes, false));
    DDP_RETURN_IF_ERROR(f.getDouble("seconds", &c.seconds, false));
    out->push_back(std::move(c));
  }
  return Status::ok();
}

Json encodeFlightRecord(const std::vector<FlightOpReport>& ops) {
  Json a = Json::array();
  for (const FlightOpReport& op : ops) {
    a.push_back(Json{{"backend", op.backend}, {"seq", op.seq}, {"op", op.op}, {"bytes", op.bytes}, {"state", op.state},
                     {"issuedSecondsAgo", number(op.issuedSecondsAgo)},
                     {"startedSecondsAgo", number(op.startedSecondsAgo)},
                     {"endedSecondsAgo", number(op.endedSecondsAgo)}});
  }
  return a;
}

Status decodeFlightRecord(const Json& array, const std::string& where, std::vector<FlightOpReport>* out) {
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!array[i].is_object()) return invalidArgument(at + ": expected an object");
    Fields f(array[i], at);
    FlightOpReport op;
    DDP_RETURN_IF_ERROR(f.getString("backend", &op.backend, false));
    DDP_RETURN_IF_ERROR(f.getInt("seq", &op.seq));
    DDP_RETURN_IF_ERROR(f.getString("op", &op.op));
    DDP_RETURN_IF_ERROR(f.getInt("bytes", &op.bytes, false));
    DDP_RETURN_IF_ERROR(f.getString("state", &op.state));
    DDP_RETURN_IF_ERROR(f.getDouble("issuedSecondsAgo", &op.issuedSecondsAgo, false));
    DDP_RETURN_IF_ERROR(f.getDouble("startedSecondsAgo", &op.startedSecondsAgo, false));
    DDP_RETURN_IF_ERROR(f.getDouble("endedSecondsAgo", &op.endedSecondsAgo, false));
    out->push_back(std::move(op));
  }
  return Status::ok();
}

// The report's progress fields (everything but identity, counters and lists).
Status decodeProgress(const Fields& f, const Json& j, HeartbeatReport* r) {
  DDP_RETURN_IF_ERROR(f.getInt("step", &r->step, false));
  DDP_RETURN_IF_ERROR(f.getInt("totalSteps", &r->totalSteps, false));
  DDP_RETURN_IF_ERROR(f.getInt("epoch", &r->epoch, false));
  DDP_RETURN_IF_ERROR(f.getInt("epochs", &r->epochs, false));
  DDP_RETURN_IF_ERROR(f.getDouble("loss", &r->loss, false));
  DDP_RETURN_IF_ERROR(f.getDouble("samplesPerSecond", &r->samplesPerSecond, false));
  for (auto [key, out] : {std::pair{"testAccuracy", &r->testAccuracy}, std::pair{"valLoss", &r->valLoss},
                          std::pair{"tokensPerSecond", &r->tokensPerSecond}, std::pair{"mfu", &r->mfu}}) {
    DDP_RETURN_IF_ERROR(f.getOptionalDouble(key, out));
  }
  return f.getString("message", &r->message, false);
}

}  // namespace

std::string encodeRegistrationRequest(const std::string& workerId, const std::string& host,
                                      const std::string& advertiseAddress, int64_t pid, const Rejoin& rejoin) {
  Json j{{"workerId", workerId}, {"host", host}, {"advertiseAddress", advertiseAddress}, {"pid", pid}};
  if (rejoin.leftGeneration > 0) {
    j["leftGeneration"] = rejoin.leftGeneration;
    j["reason"] = rejoin.reason;
    if (rejoin.lastStep >= 0) j["lastStep"] = rejoin.lastStep;
  }
  return dump(j);
}

Result<Registration> decodeRegistration(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseObject(json, "registration"));
  Fields f(j, "registration");
  Registration r;
  DDP_RETURN_IF_ERROR(f.getString("workerId", &r.workerId));
  DDP_RETURN_IF_ERROR(f.getInt("generation", &r.generation));
  if (auto it = j.find("incarnation"); it != j.end() && it->is_string()) r.incarnation = it->get<std::string>();
  return r;
}

std::string encodeAssignment(const Assignment& a) {
  Json peers = Json::array();
  for (const PeerInfo& p : a.peers) {
    peers.push_back(Json{{"rank", p.rank}, {"workerId", p.workerId}, {"advertiseAddress", p.advertiseAddress}});
  }
  return dump(Json{{"rank", a.rank}, {"worldSize", a.worldSize}, {"generation", a.generation},
                   {"spec", a.specYaml}, {"specSchema", a.specSchema}, {"peers", peers}});
}

Result<Assignment> decodeAssignment(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseObject(json, "assignment"));
  Fields f(j, "assignment");
  Assignment a;
  DDP_RETURN_IF_ERROR(f.getInt("rank", &a.rank));
  DDP_RETURN_IF_ERROR(f.getInt("worldSize", &a.worldSize));
  DDP_RETURN_IF_ERROR(f.getInt("generation", &a.generation));
  DDP_RETURN_IF_ERROR(f.getString("spec", &a.specYaml));
  if (auto it = j.find("specSchema"); it != j.end()) {
    if (!it->is_number_integer()) return invalidArgument(f.at("specSchema") + ": expected an integer");
    a.specSchema = it->get<int>();
  }
  if (const Json* peers = f.array("peers")) {
    for (size_t i = 0; i < peers->size(); ++i) {
      const std::string where = f.at("peers") + "[" + std::to_string(i) + "]";
      if (!(*peers)[i].is_object()) return invalidArgument(where + ": expected an object");
      Fields pf((*peers)[i], where);
      PeerInfo p;
      DDP_RETURN_IF_ERROR(pf.getInt("rank", &p.rank));
      DDP_RETURN_IF_ERROR(pf.getString("workerId", &p.workerId));
      DDP_RETURN_IF_ERROR(pf.getString("advertiseAddress", &p.advertiseAddress, false));
      a.peers.push_back(std::move(p));
    }
  }
  if (a.worldSize <= 0 || a.rank < 0 || a.rank >= a.worldSize) {
    return invalidArgument("assignment: rank " + std::to_string(a.rank) + " not in [0, " +
                           std::to_string(a.worldSize) + ")");
  }
  return a;
}

std::string encodeHeartbeatReport(const HeartbeatReport& r) {
  Json collectives = Json::array();
  for (const CollectiveInFlight& c : r.collectives) {
    collectives.push_back(Json{{"backend", c.backend}, {"issued", c.issued}, {"seq", c.seq}, {"op", c.op},
                               {"bytes", c.bytes}, {"seconds", number(c.seconds)}});
  }
  Json checkpoint = nullptr;
  if (r.checkpoint) {
    checkpoint = Json{{"step", r.checkpoint->step}, {"bytes", r.checkpoint->bytes}, {"path", r.checkpoint->path}};
  }
  Json ext = Json::object();
  for (const auto& [k, v] : r.ext) ext[k] = number(v);
  Json j{{"workerId", r.workerId},
                   {"rank", r.rank},
                   {"state", workerStateName(r.state)},
                   {"step", r.step},
                   {"totalSteps", r.totalSteps},
                   {"epoch", r.epoch},
                   {"epochs", r.epochs},
                   {"loss", number(r.loss)},
                   {"samplesPerSecond", number(r.samplesPerSecond)},
                   {"testAccuracy", r.testAccuracy ? number(*r.testAccuracy) : Json(nullptr)},
                   {"counters", encodeCounters(r.counters)},
                   {"collectives", collectives},
                   {"checkpoint", checkpoint},
                   {"message", r.message},
                   {"ext", ext}};
  // Sent only when known: a heartbeat without them reads as one from an older worker.
  if (r.valLoss) j["valLoss"] = number(*r.valLoss);
  if (r.tokensPerSecond) j["tokensPerSecond"] = number(*r.tokensPerSecond);
  if (r.mfu) j["mfu"] = number(*r.mfu);
  if (!r.flightRecord.empty()) j["flightRecord"] = encodeFlightRecord(r.flightRecord);
  if (r.lastShard) {
    Json shard = Json::parse(encodeShardOutcome(r.lastShard->outcome));
    shard["generation"] = r.lastShard->generation;
    shard["step"] = r.lastShard->step;
    j["lastShard"] = shard;
  }
  return dump(j);
}

Result<HeartbeatReport> decodeHeartbeatReport(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseObject(json, "heartbeat"));
  Fields f(j, "heartbeat");
  HeartbeatReport r;
  DDP_RETURN_IF_ERROR(f.getString("workerId", &r.workerId));
  DDP_RETURN_IF_ERROR(f.getInt("rank", &r.rank));
  std::string state;
  DDP_RETURN_IF_ERROR(f.getString("state", &state));
  if (!parseWorkerState(state, &r.state)) {
    return invalidArgument("heartbeat.state: '" + state + "' is not Running, Succeeded, Failed or Stopped");
  }
  DDP_RETURN_IF_ERROR(decodeProgress(f, j, &r));
  if (const Json* c = f.object("counters")) DDP_RETURN_IF_ERROR(decodeCounters(Fields(*c, f.at("counters")), &r.counters));
  if (const Json* c = f.array("collectives")) DDP_RETURN_IF_ERROR(decodeCollectives(*c, f.at("collectives"), &r.collectives));
  if (const Json* c = f.object("checkpoint")) {
    Fields cf(*c, f.at("checkpoint"));
    CheckpointReport cp;
    DDP_RETURN_IF_ERROR(cf.getInt("step", &cp.step));
    DDP_RETURN_IF_ERROR(cf.getInt("bytes", &cp.bytes, false));
    DDP_RETURN_IF_ERROR(cf.getString("path", &cp.path, false));
    r.checkpoint = std::move(cp);
  }
  if (const Json* a = f.array("flightRecord")) {
    DDP_RETURN_IF_ERROR(decodeFlightRecord(*a, f.at("flightRecord"), &r.flightRecord));
  }
  if (const Json* s = f.object("lastShard")) {
    Fields sf(*s, f.at("lastShard"));
    LastShardReport last;
    DDP_RETURN_IF_ERROR(sf.getInt("generation", &last.generation));
    DDP_RETURN_IF_ERROR(sf.getInt("step", &last.step));
    DDP_RETURN_IF_ERROR(sf.getInt("rank", &last.outcome.rank));
    last.outcome.ok = s->value("ok", false);
    int64_t bytes = 0, crc = 0;
    DDP_RETURN_IF_ERROR(sf.getInt("bytes", &bytes, false));
    DDP_RETURN_IF_ERROR(sf.getInt("crc", &crc, false));
    last.outcome.entry = {static_cast<uint64_t>(bytes), static_cast<uint32_t>(crc)};
    DDP_RETURN_IF_ERROR(sf.getString("error", &last.outcome.error, false));
    DDP_RETURN_IF_ERROR(sf.getDouble("snapshotSeconds", &last.outcome.snapshotSeconds, false));
    DDP_RETURN_IF_ERROR(sf.getDouble("writeSeconds", &last.outcome.writeSeconds, false));
    r.lastShard = std::move(last);
  }
  if (const Json* e = f.object("ext")) {
    for (auto it = e->begin(); it != e->end(); ++it) {
      if (it.value().is_number()) r.ext[it.key()] = it.value().get<double>();
    }
  }
  return r;
}

std::string encodeHeartbeatAnswer(const HeartbeatAnswer& a) {
  Json command{{"type", commandTypeName(a.command.type)}};
  if (a.command.type == CommandType::kCheckpoint) command["step"] = a.command.step;
  return dump(Json{{"command", command}, {"generation", a.generation}});
}

Result<HeartbeatAnswer> decodeHeartbeatAnswer(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseObject(json, "heartbeat answer"));
  Fields f(j, "heartbeat answer");
  HeartbeatAnswer a;
  DDP_RETURN_IF_ERROR(f.getInt("generation", &a.generation, false));
  const Json* command = f.object("command");
  if (command == nullptr) return invalidArgument(f.at("command") + ": missing");
  Fields cf(*command, f.at("command"));
  std::string type;
  DDP_RETURN_IF_ERROR(cf.getString("type", &type));
  if (!wire::parseCommandType(type, &a.command.type)) return invalidArgument(cf.at("type") + ": unknown command '" + type + "'");
  DDP_RETURN_IF_ERROR(cf.getInt("step", &a.command.step, a.command.type == CommandType::kCheckpoint));
  return a;
}

bool isFenced(const Status& st) {
  return st.code() == StatusCode::kAborted && st.message().find(kFencedPrefix) != std::string::npos;
}

std::optional<std::string> jobFinished(const Status& st) {
  const std::string prefix = kJobFinishedPrefix;
  const size_t at = st.message().find(prefix);
  if (st.code() != StatusCode::kOutOfRange || at == std::string::npos) return std::nullopt;
  const std::string rest = st.message().substr(at + prefix.size());
  return rest.substr(0, rest.find(' '));
}

std::string encodeShardOutcome(const ShardOutcome& o) {
  Json j{{"rank", o.rank}, {"ok", o.ok}, {"snapshotSeconds", number(o.snapshotSeconds)},
         {"writeSeconds", number(o.writeSeconds)}};
  if (o.ok) {
    j["bytes"] = o.entry.bytes;
    j["crc"] = o.entry.crc;
  } else {
    j["error"] = o.error;
  }
  return dump(j);
}

std::string encodeCommitOutcome(const CommitOutcome& o) {
  Json j{{"ok", o.ok}, {"seconds", number(o.seconds)}};
  if (o.onDisk) j["onDisk"] = *o.onDisk;
  if (!o.onDiskDetail.empty()) {
    Json detail = Json::array();
    for (const CommittedCheckpoint& d : o.onDiskDetail) {
      detail.push_back(Json{{"step", d.step}, {"bytes", d.bytes}, {"worldSize", d.worldSize},
                            {"createdMs", d.createdUnixMs}, {"path", d.path}});
    }
    j["onDiskDetail"] = detail;
  }
  if (o.ok) {
    j["bytes"] = o.bytes;
    j["path"] = o.path;
  } else {
    j["error"] = o.error;
  }
  return dump(j);
}

Result<CommitVerdictWire> decodeCommitVerdict(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseObject(json, "checkpoint decision"));
  Fields f(j, "checkpoint decision");
  CommitVerdictWire v;
  std::string decision;
  DDP_RETURN_IF_ERROR(f.getString("decision", &decision));
  DDP_RETURN_IF_ERROR(f.getString("reason", &v.reason, false));
  if (decision == "pending") {
    v.decision = CommitDecisionKind::kPending;
  } else if (decision == "commit") {
    v.decision = CommitDecisionKind::kCommit;
  } else if (decision == "abandon") {
    v.decision = CommitDecisionKind::kAbandon;
  } else {
    return invalidArgument("checkpoint decision: unknown decision '" + decision + "'");
  }
  auto shards = j.find("shards");
  if (shards != j.end() && !shards->is_array()) return invalidArgument("checkpoint decision: 'shards' is not an array");
  if (shards != j.end()) {
    for (const auto& e : *shards) {
      if (!e.is_object()) return invalidArgument("checkpoint decision: a shard is not an object");
      Fields sf(e, "checkpoint decision shard");
      int64_t rank = -1, bytes = 0, crc = 0;
      DDP_RETURN_IF_ERROR(sf.getInt("rank", &rank));
      DDP_RETURN_IF_ERROR(sf.getInt("bytes", &bytes));
      DDP_RETURN_IF_ERROR(sf.getInt("crc", &crc));
      if (rank != static_cast<int64_t>(v.shards.size()) || bytes < 0 || crc < 0 || crc > 0xffffffffLL) {
        return invalidArgument("checkpoint decision: shard " + std::to_string(v.shards.size()) + " is out of order or out of range");
      }
      v.shards.push_back({static_cast<uint64_t>(bytes), static_cast<uint32_t>(crc)});
    }
  }
  if (v.decision == CommitDecisionKind::kCommit && v.shards.empty()) {
    return invalidArgument("checkpoint decision: commit without shards");
  }
  return v;
}

}  // namespace ddp::runtime
