#include "common/protocol/heartbeat_parts.h"

#include <utility>

namespace ddp::protocol {

Json collectivesJson(const std::vector<CollectiveView>& views) {
  Json a = Json::array();
  for (const CollectiveView& c : views) {
    a.push_back(Json{{"backend", c.backend}, {"issued", c.issued}, {"seq", c.seq}, {"op", c.op},
                     {"bytes", c.bytes}, {"seconds", jsonNumber(c.seconds)}});
  }
  return a;
}

Json flightRecordJson(const std::vector<FlightOp>& ops) {
  Json a = Json::array();
  for (const FlightOp& op : ops) {
    a.push_back(Json{{"backend", op.backend}, {"seq", op.seq}, {"op", op.op}, {"bytes", op.bytes}, {"state", op.state},
                     {"issuedSecondsAgo", jsonNumber(op.issuedSecondsAgo)},
                     {"startedSecondsAgo", jsonNumber(op.startedSecondsAgo)},
                     {"endedSecondsAgo", jsonNumber(op.endedSecondsAgo)}});
  }
  return a;
}

Json checkpointJson(const std::optional<HeartbeatCheckpoint>& c) {
  if (!c) return nullptr;
  return Json{{"step", c->step}, {"bytes", c->bytes}, {"path", c->path}};
}

Status decodeCollectives(const JsonFields& f, std::vector<CollectiveView>* out) {
  const bool strict = f.reading() == Reading::kStrict;
  const Json* array = f.array("collectives");
  for (size_t i = 0; array != nullptr && i < array->size(); ++i) {
    DDP_ASSIGN_OR_RETURN(JsonFields e, f.element("collectives", i, (*array)[i]));
    CollectiveView c;
    DDP_RETURN_IF_ERROR(e.getString("backend", &c.backend, strict));
    DDP_RETURN_IF_ERROR(e.getInt("seq", &c.seq, strict));
    DDP_RETURN_IF_ERROR(e.getInt("issued", &c.issued, false));
    DDP_RETURN_IF_ERROR(e.getString("op", &c.op, strict));
    DDP_RETURN_IF_ERROR(e.getInt("bytes", &c.bytes, false));
    DDP_RETURN_IF_ERROR(e.getDouble("seconds", &c.seconds, false));
    out->push_back(std::move(c));
  }
  return Status::ok();
}

Status decodeFlightRecord(const JsonFields& f, std::vector<FlightOp>* out) {
  const bool strict = f.reading() == Reading::kStrict;
  const Json* array = f.array("flightRecord");
  for (size_t i = 0; array != nullptr && i < array->size(); ++i) {
    DDP_ASSIGN_OR_RETURN(JsonFields e, f.element("flightRecord", i, (*array)[i]));
    FlightOp op;
    DDP_RETURN_IF_ERROR(e.getString("backend", &op.backend, false));
    DDP_RETURN_IF_ERROR(e.getInt("seq", &op.seq, strict));
    DDP_RETURN_IF_ERROR(e.getString("op", &op.op, strict));
    DDP_RETURN_IF_ERROR(e.getInt("bytes", &op.bytes, false));
    DDP_RETURN_IF_ERROR(e.getString("state", &op.state, strict));
    DDP_RETURN_IF_ERROR(e.getDouble("issuedSecondsAgo", &op.issuedSecondsAgo, false));
    DDP_RETURN_IF_ERROR(e.getDouble("startedSecondsAgo", &op.startedSecondsAgo, false));
    DDP_RETURN_IF_ERROR(e.getDouble("endedSecondsAgo", &op.endedSecondsAgo, false));
    out->push_back(std::move(op));
  }
  return Status::ok();
}

Status decodeCheckpoint(const JsonFields& f, std::optional<HeartbeatCheckpoint>* out) {
  const Json* object = f.object("checkpoint");
  if (object == nullptr) return Status::ok();
  DDP_ASSIGN_OR_RETURN(JsonFields c, f.child("checkpoint", *object));
  HeartbeatCheckpoint cp;
  DDP_RETURN_IF_ERROR(c.getInt("step", &cp.step, f.reading() == Reading::kStrict));
  DDP_RETURN_IF_ERROR(c.getInt("bytes", &cp.bytes, false));
  DDP_RETURN_IF_ERROR(c.getString("path", &cp.path, false));
  *out = std::move(cp);
  return Status::ok();
}

}  // namespace ddp::protocol
