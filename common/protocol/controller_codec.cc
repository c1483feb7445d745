#include "common/protocol/controller_codec.h"

#include <utility>

#include "common/protocol/json_fields.h"
#include "common/protocol/worker_codec.h"

namespace ddp::protocol {
namespace {

// The repeated phase-1 report: size and CRC only when it went well.
Status decodeLastShard(const JsonFields& f, std::optional<HeartbeatShard>* out) {
  const Json* object = f.object("lastShard");
  if (object == nullptr) return Status::ok();
  JsonFields s(*object, f.at("lastShard"), Reading::kTolerant);
  HeartbeatShard shard;
  DDP_RETURN_IF_ERROR(s.getInt("generation", &shard.generation, false));
  DDP_RETURN_IF_ERROR(s.getInt("step", &shard.step, false));
  DDP_RETURN_IF_ERROR(s.getInt("rank", &shard.report.rank, false));
  DDP_RETURN_IF_ERROR(s.getBool("ok", &shard.report.ok, false));
  if (shard.report.ok) {
    int64_t bytes = 0, crc = 0;
    DDP_RETURN_IF_ERROR(s.getInt("bytes", &bytes, false));
    DDP_RETURN_IF_ERROR(s.getInt("crc", &crc, false));
    shard.report.bytes = static_cast<uint64_t>(bytes);
    shard.report.crc = static_cast<uint32_t>(crc);
  } else if (auto e = object->find("error"); e != object->end() && e->is_string()) {
    shard.report.error = e->get<std::string>();
  }
  *out = std::move(shard);
  return Status::ok();
}

// Numbers only; another kind of value is passed over, as it always was.
void numbers(const Json* object, std::map<std::string, double>* out) {
  if (object == nullptr) return;
  for (const auto& [k, v] : object->items()) {
    if (v.is_number()) (*out)[k] = v.get<double>();
  }
}

Status decodeProgress(const JsonFields& f, Heartbeat* h) {
  DDP_RETURN_IF_ERROR(f.getInt("step", &h->step, false));
  DDP_RETURN_IF_ERROR(f.getInt("totalSteps", &h->totalSteps, false));
  DDP_RETURN_IF_ERROR(f.getInt("epoch", &h->epoch, false));
  DDP_RETURN_IF_ERROR(f.getInt("epochs", &h->epochs, false));
  DDP_RETURN_IF_ERROR(f.getDouble("loss", &h->loss, false));
  DDP_RETURN_IF_ERROR(f.getDouble("samplesPerSecond", &h->samplesPerSecond, false));
  DDP_RETURN_IF_ERROR(f.getString("message", &h->message, false));
  for (auto [name, out] : {std::pair{"testAccuracy", &h->testAccuracy}, std::pair{"valLoss", &h->valLoss},
                           std::pair{"tokensPerSecond", &h->tokensPerSecond}, std::pair{"mfu", &h->mfu}}) {
    if (auto it = f.json().find(name); it != f.json().end() && it->is_number()) *out = it->get<double>();
  }
  numbers(f.object("counters"), &h->counters);
  return decodeCheckpoint(f, &h->checkpoint);
}

}  // namespace

Result<Heartbeat> decodeHeartbeat(std::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument("heartbeat: the body is not a JSON object");
  JsonFields f(j, "heartbeat", Reading::kTolerant);
  Heartbeat h;
  DDP_RETURN_IF_ERROR(f.getString("workerId", &h.workerId, false));
  if (h.workerId.empty()) return invalidArgument("heartbeat: 'workerId' is required");
  DDP_RETURN_IF_ERROR(f.getInt("rank", &h.rank, false));
  DDP_RETURN_IF_ERROR(f.getString("state", &h.state, false));
  if (WorkerState parsed; !parseWorkerState(h.state, &parsed)) {
    return invalidArgument("heartbeat: 'state' must be Running, Succeeded, Failed or Stopped, got '" + h.state + "'");
  }
  DDP_RETURN_IF_ERROR(decodeProgress(f, &h));
  DDP_RETURN_IF_ERROR(decodeLastShard(f, &h.lastShard));
  DDP_RETURN_IF_ERROR(decodeCollectives(f, &h.collectives));
  DDP_RETURN_IF_ERROR(decodeFlightRecord(f, &h.flightRecord));
  if (const Json* ext = f.object("ext")) {
    h.extJson = ext->dump();
    numbers(ext, &h.ext);
  }
  return h;
}

ShardReport shardReportOf(const ShardOutcome& o) {
  return ShardReport{o.rank, o.ok, o.entry.bytes, o.entry.crc, o.snapshotSeconds, o.writeSeconds, o.error};
}

Result<ShardReport> decodeShardReport(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(ShardOutcome o, decodeShardOutcome(json));
  return shardReportOf(o);
}

}  // namespace ddp::protocol
