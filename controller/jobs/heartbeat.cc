#include "controller/jobs/heartbeat.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace ddp::controller {
namespace {

using nlohmann::json;

template <typename T>
Status field(const json& j, const char* name, T* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::ok();
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return invalidArgument(std::string("heartbeat: field '") + name + "' has the wrong type");
  }
  return Status::ok();
}

Status parseFlightRecord(const json& array, std::vector<FlightOp>* out) {
  for (const auto& e : array) {
    if (!e.is_object()) return invalidArgument("heartbeat: 'flightRecord' entries must be objects");
    FlightOp op;
    DDP_RETURN_IF_ERROR(field(e, "backend", &op.backend));
    DDP_RETURN_IF_ERROR(field(e, "seq", &op.seq));
    DDP_RETURN_IF_ERROR(field(e, "op", &op.op));
    DDP_RETURN_IF_ERROR(field(e, "bytes", &op.bytes));
    DDP_RETURN_IF_ERROR(field(e, "state", &op.state));
    DDP_RETURN_IF_ERROR(field(e, "issuedSecondsAgo", &op.issuedSecondsAgo));
    DDP_RETURN_IF_ERROR(field(e, "startedSecondsAgo", &op.startedSecondsAgo));
    DDP_RETURN_IF_ERROR(field(e, "endedSecondsAgo", &op.endedSecondsAgo));
    out->push_back(std::move(op));
  }
  return Status::ok();
}

}  // namespace

Result<Heartbeat> parseHeartbeat(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument("heartbeat: the body is not a JSON object");
  Heartbeat h;
  DDP_RETURN_IF_ERROR(field(j, "workerId", &h.workerId));
  if (h.workerId.empty()) return invalidArgument("heartbeat: 'workerId' is required");
  DDP_RETURN_IF_ERROR(field(j, "rank", &h.rank));
  DDP_RETURN_IF_ERROR(field(j, "state", &h.state));
  if (wire::WorkerState parsed; !wire::parseWorkerState(h.state, &parsed)) {
    return invalidArgument("heartbeat: 'state' must be Running, Succeeded, Failed or Stopped, got '" + h.state + "'");
  }
  DDP_RETURN_IF_ERROR(field(j, "step", &h.step));
  DDP_RETURN_IF_ERROR(field(j, "totalSteps", &h.totalSteps));
  DDP_RETURN_IF_ERROR(field(j, "epoch", &h.epoch));
  DDP_RETURN_IF_ERROR(field(j, "epochs", &h.epochs));
  DDP_RETURN_IF_ERROR(field(j, "loss", &h.loss));
  DDP_RETURN_IF_ERROR(field(j, "samplesPerSecond", &h.samplesPerSecond));
  DDP_RETURN_IF_ERROR(field(j, "message", &h.message));
  for (auto [name, out] : {std::pair{"testAccuracy", &h.testAccuracy}, std::pair{"valLoss", &h.valLoss},
                           std::pair{"tokensPerSecond", &h.tokensPerSecond}, std::pair{"mfu", &h.mfu}}) {
    if (auto it = j.find(name); it != j.end() && it->is_number()) *out = it->get<double>();
  }
  if (auto it = j.find("counters"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_number()) h.counters[k] = v.get<double>();
    }
  }
  if (auto it = j.find("checkpoint"); it != j.end() && it->is_object()) {
    HeartbeatCheckpoint c;
    DDP_RETURN_IF_ERROR(field(*it, "step", &c.step));
    DDP_RETURN_IF_ERROR(field(*it, "bytes", &c.bytes));
    DDP_RETURN_IF_ERROR(field(*it, "path", &c.path));
    h.checkpoint = c;
  }
  if (auto it = j.find("lastShard"); it != j.end() && it->is_object()) {
    HeartbeatShard s;
    DDP_RETURN_IF_ERROR(field(*it, "generation", &s.generation));
    DDP_RETURN_IF_ERROR(field(*it, "step", &s.step));
    DDP_RETURN_IF_ERROR(field(*it, "rank", &s.report.rank));
    DDP_RETURN_IF_ERROR(field(*it, "ok", &s.report.ok));
    if (s.report.ok) {
      int64_t bytes = 0, crc = 0;
      DDP_RETURN_IF_ERROR(field(*it, "bytes", &bytes));
      DDP_RETURN_IF_ERROR(field(*it, "crc", &crc));
      s.report.bytes = static_cast<uint64_t>(bytes);
      s.report.crc = static_cast<uint32_t>(crc);
    } else if (auto e = it->find("error"); e != it->end() && e->is_string()) {
      s.report.error = e->get<std::string>();
    }
    h.lastShard = s;
  }
  if (auto it = j.find("collectives"); it != j.end() && it->is_array()) {
    for (const auto& e : *it) {
      if (!e.is_object()) return invalidArgument("heartbeat: 'collectives' entries must be objects");
      CollectiveView c;
      DDP_RETURN_IF_ERROR(field(e, "backend", &c.backend));
      DDP_RETURN_IF_ERROR(field(e, "issued", &c.issued));
      DDP_RETURN_IF_ERROR(field(e, "seq", &c.seq));
      DDP_RETURN_IF_ERROR(field(e, "op", &c.op));
      DDP_RETURN_IF_ERROR(field(e, "seconds", &c.seconds));
      h.collectives.push_back(std::move(c));
    }
  }
  if (auto it = j.find("flightRecord"); it != j.end() && it->is_array()) {
    DDP_RETURN_IF_ERROR(parseFlightRecord(*it, &h.flightRecord));
  }
  if (auto it = j.find("ext"); it != j.end() && it->is_object()) {
    h.extJson = it->dump();
    for (const auto& [k, v] : it->items()) {
      if (v.is_number()) h.ext[k] = v.get<double>();
    }
  }
  return h;
}

std::string commandJson(const Command& c, int64_t generation) {
  json cmd = {{"type", commandTypeName(c.type)}};
  if (c.type == CommandType::kCheckpoint) cmd["step"] = c.step;
  return json{{"command", cmd}, {"generation", generation}}.dump();
}

}  // namespace ddp::controller
