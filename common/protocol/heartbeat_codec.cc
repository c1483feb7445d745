// The heartbeat's JSON codec (heartbeat_codec.h).
#include "common/protocol/heartbeat_codec.h"

#include <utility>

namespace ddp::protocol {
namespace {

Json countersJson(const HeartbeatCounters& c) {
  return Json{{"samples", c.samples},
              {"steps", c.steps},
              {"stepSeconds", jsonNumber(c.stepSeconds)},
              {"commBytes", c.commBytes},
              {"commExposedSeconds", jsonNumber(c.commExposedSeconds)},
              {"compressionUncompressedBytes", c.compressionUncompressedBytes},
              {"compressionSentBytes", c.compressionSentBytes}};
}

// `object` with only its numeric fields: what the tolerant reading takes of an object of figures
// (another kind of value is passed over, as the controller always did).
Json numbersOf(const Json& object) {
  Json out = Json::object();
  for (const auto& [k, v] : object.items()) {
    if (v.is_number()) out[k] = v;
  }
  return out;
}

Status decodeCounters(const JsonFields& f, HeartbeatCounters* c) {
  const Json* object = f.object("counters");
  if (object == nullptr) return Status::ok();
  const bool tolerant = f.reading() == Reading::kTolerant;
  const Json numbers = tolerant ? numbersOf(*object) : Json();
  JsonFields cf(tolerant ? numbers : *object, f.at("counters"), f.reading());
  DDP_RETURN_IF_ERROR(cf.getInt("samples", &c->samples, false));
  DDP_RETURN_IF_ERROR(cf.getInt("steps", &c->steps, false));
  DDP_RETURN_IF_ERROR(cf.getDouble("stepSeconds", &c->stepSeconds, false));
  DDP_RETURN_IF_ERROR(cf.getInt("commBytes", &c->commBytes, false));
  DDP_RETURN_IF_ERROR(cf.getDouble("commExposedSeconds", &c->commExposedSeconds, false));
  DDP_RETURN_IF_ERROR(cf.getInt("compressionUncompressedBytes", &c->compressionUncompressedBytes, false));
  return cf.getInt("compressionSentBytes", &c->compressionSentBytes, false);
}

// The figures that may be absent (null until known). Tolerant: only a number counts.
Status decodeOptionalFigures(const JsonFields& f, Heartbeat* h) {
  for (auto [key, out] : {std::pair{"testAccuracy", &h->testAccuracy}, std::pair{"valLoss", &h->valLoss},
                          std::pair{"tokensPerSecond", &h->tokensPerSecond}, std::pair{"mfu", &h->mfu}}) {
    if (f.reading() == Reading::kStrict) {
      DDP_RETURN_IF_ERROR(f.getOptionalDouble(key, out));
    } else if (auto it = f.json().find(key); it != f.json().end() && it->is_number()) {
      *out = it->get<double>();
    }
  }
  return Status::ok();
}

Status decodeProgress(const JsonFields& f, Heartbeat* h) {
  DDP_RETURN_IF_ERROR(f.getInt("step", &h->step, false));
  DDP_RETURN_IF_ERROR(f.getInt("totalSteps", &h->totalSteps, false));
  DDP_RETURN_IF_ERROR(f.getInt("epoch", &h->epoch, false));
  DDP_RETURN_IF_ERROR(f.getInt("epochs", &h->epochs, false));
  DDP_RETURN_IF_ERROR(f.getDouble("loss", &h->loss, false));
  DDP_RETURN_IF_ERROR(f.getDouble("samplesPerSecond", &h->samplesPerSecond, false));
  DDP_RETURN_IF_ERROR(decodeOptionalFigures(f, h));
  return f.getString("message", &h->message, false);
}

// The repeated phase-1 report. Strict: generation, step and rank required. Size and CRC count
// only when it went well, the error only when it did not.
Status decodeLastShard(const JsonFields& f, std::optional<LastShardReport>* out) {
  const Json* object = f.object("lastShard");
  if (object == nullptr) return Status::ok();
  const bool strict = f.reading() == Reading::kStrict;
  DDP_ASSIGN_OR_RETURN(JsonFields s, f.child("lastShard", *object));
  LastShardReport last;
  ShardOutcome& o = last.outcome;
  DDP_RETURN_IF_ERROR(s.getInt("generation", &last.generation, strict));
  DDP_RETURN_IF_ERROR(s.getInt("step", &last.step, strict));
  DDP_RETURN_IF_ERROR(s.getInt("rank", &o.rank, strict));
  DDP_RETURN_IF_ERROR(s.getBool("ok", &o.ok, false));
  if (o.ok) {
    int64_t bytes = 0, crc = 0;
    DDP_RETURN_IF_ERROR(s.getInt("bytes", &bytes, false));
    DDP_RETURN_IF_ERROR(s.getInt("crc", &crc, false));
    o.entry = {static_cast<uint64_t>(bytes), static_cast<uint32_t>(crc)};
  } else if (strict) {
    DDP_RETURN_IF_ERROR(s.getString("error", &o.error, false));
  } else if (auto e = object->find("error"); e != object->end() && e->is_string()) {
    o.error = e->get<std::string>();
  }
  const Json numbers = strict ? Json() : numbersOf(*object);
  JsonFields seconds(strict ? *object : numbers, f.at("lastShard"), f.reading());
  DDP_RETURN_IF_ERROR(seconds.getDouble("snapshotSeconds", &o.snapshotSeconds, false));
  DDP_RETURN_IF_ERROR(seconds.getDouble("writeSeconds", &o.writeSeconds, false));
  *out = std::move(last);
  return Status::ok();
}

Status decodeIdentity(const JsonFields& f, Heartbeat* h) {
  const bool strict = f.reading() == Reading::kStrict;
  DDP_RETURN_IF_ERROR(f.getString("workerId", &h->workerId, strict));
  if (h->workerId.empty()) return invalidArgument(f.at("workerId") + ": missing");
  DDP_RETURN_IF_ERROR(f.getInt("rank", &h->rank, strict));
  std::string state = workerStateName(h->state);
  DDP_RETURN_IF_ERROR(f.getString("state", &state, strict));
  if (!parseWorkerState(state, &h->state)) {
    return invalidArgument(f.at("state") + ": must be Running, Succeeded, Failed or Stopped, got '" + state + "'");
  }
  return Status::ok();
}

}  // namespace

Json shardOutcomeJson(const ShardOutcome& o) {
  Json j{{"rank", o.rank}, {"ok", o.ok}, {"snapshotSeconds", jsonNumber(o.snapshotSeconds)},
         {"writeSeconds", jsonNumber(o.writeSeconds)}};
  if (o.ok) {
    j["bytes"] = o.entry.bytes;
    j["crc"] = o.entry.crc;
  } else {
    j["error"] = o.error;
  }
  return j;
}

std::string encodeHeartbeat(const Heartbeat& h) {
  Json ext = Json::object();
  for (const auto& [k, v] : h.ext) ext[k] = jsonNumber(v);
  Json j{{"workerId", h.workerId},
         {"rank", h.rank},
         {"state", workerStateName(h.state)},
         {"step", h.step},
         {"totalSteps", h.totalSteps},
         {"epoch", h.epoch},
         {"epochs", h.epochs},
         {"loss", jsonNumber(h.loss)},
         {"samplesPerSecond", jsonNumber(h.samplesPerSecond)},
         {"testAccuracy", h.testAccuracy ? jsonNumber(*h.testAccuracy) : Json(nullptr)},
         {"counters", countersJson(h.counters)},
         {"collectives", collectivesJson(h.collectives)},
         {"checkpoint", checkpointJson(h.checkpoint)},
         {"message", h.message},
         {"ext", ext}};
  // Sent only when known: a heartbeat without them reads as one from an older worker.
  if (h.valLoss) j["valLoss"] = jsonNumber(*h.valLoss);
  if (h.tokensPerSecond) j["tokensPerSecond"] = jsonNumber(*h.tokensPerSecond);
  if (h.mfu) j["mfu"] = jsonNumber(*h.mfu);
  if (!h.flightRecord.empty()) j["flightRecord"] = flightRecordJson(h.flightRecord);
  if (h.lastShard) {
    Json shard = shardOutcomeJson(h.lastShard->outcome);
    shard["generation"] = h.lastShard->generation;
    shard["step"] = h.lastShard->step;
    j["lastShard"] = shard;
  }
  return dumpJson(j);
}

Result<Heartbeat> decodeHeartbeat(std::string_view json, Reading reading) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "heartbeat"));
  JsonFields f(j, "heartbeat", reading);
  Heartbeat h;
  DDP_RETURN_IF_ERROR(decodeIdentity(f, &h));
  DDP_RETURN_IF_ERROR(decodeProgress(f, &h));
  DDP_RETURN_IF_ERROR(decodeCounters(f, &h.counters));
  DDP_RETURN_IF_ERROR(decodeCollectives(f, &h.collectives));
  DDP_RETURN_IF_ERROR(decodeCheckpoint(f, &h.checkpoint));
  DDP_RETURN_IF_ERROR(decodeFlightRecord(f, &h.flightRecord));
  DDP_RETURN_IF_ERROR(decodeLastShard(f, &h.lastShard));
  if (const Json* ext = f.object("ext")) {
    for (const auto& [k, v] : ext->items()) {
      if (v.is_number()) h.ext[k] = v.get<double>();
    }
  }
  return h;
}

}  // namespace ddp::protocol
