// The JSON codecs of the worker's messages (worker_codec.h).
#include "common/protocol/worker_codec.h"

#include <utility>

#include "common/protocol/heartbeat_codec.h"
#include "common/protocol/json_fields.h"

namespace ddp::protocol {
namespace {

using Fields = JsonFields;

// A shard's size and CRC-32 ("bytes", "crc"), required when `required`.
Status decodeEntry(const Fields& f, bool required, ManifestEntry* out) {
  int64_t bytes = 0, crc = 0;
  DDP_RETURN_IF_ERROR(f.getInt("bytes", &bytes, required));
  DDP_RETURN_IF_ERROR(f.getInt("crc", &crc, required));
  if (bytes < 0) return invalidArgument(f.at("bytes") + ": must not be negative");
  if (crc < 0 || crc > 0xffffffffLL) return invalidArgument(f.at("crc") + ": not a CRC-32");
  *out = {static_cast<uint64_t>(bytes), static_cast<uint32_t>(crc)};
  return Status::ok();
}

Status decodeOnDisk(const Fields& f, CommitOutcome* o) {
  if (auto v = f.json().find("onDisk"); v != f.json().end()) {
    std::vector<int64_t> steps;
    if (!v->is_array()) return invalidArgument(f.at("onDisk") + ": expected an array of integers");
    for (const Json& e : *v) {
      if (!e.is_number_integer()) return invalidArgument(f.at("onDisk") + ": expected an array of integers");
      steps.push_back(e.get<int64_t>());
    }
    o->onDisk = std::move(steps);
  }
  const Json* detail = f.array("onDiskDetail");
  for (size_t i = 0; detail != nullptr && i < detail->size(); ++i) {
    DDP_ASSIGN_OR_RETURN(Fields d, f.element("onDiskDetail", i, (*detail)[i]));
    CommittedCheckpoint c;
    DDP_RETURN_IF_ERROR(d.getInt("step", &c.step));
    DDP_RETURN_IF_ERROR(d.getInt("bytes", &c.bytes, false));
    DDP_RETURN_IF_ERROR(d.getInt("worldSize", &c.worldSize, false));
    DDP_RETURN_IF_ERROR(d.getInt("createdMs", &c.createdUnixMs, false));
    DDP_RETURN_IF_ERROR(d.getString("path", &c.path, false));
    o->onDiskDetail.push_back(std::move(c));
  }
  return Status::ok();
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
  return dumpJson(j);
}

Result<Registration> decodeRegistration(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "registration"));
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
  return dumpJson(Json{{"rank", a.rank}, {"worldSize", a.worldSize}, {"generation", a.generation},
                   {"spec", a.specYaml}, {"specSchema", a.specSchema}, {"peers", peers}});
}

Result<Assignment> decodeAssignment(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "assignment"));
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

std::string encodeHeartbeatAnswer(const HeartbeatAnswer& a) {
  Json command{{"type", commandTypeName(a.command.type)}};
  if (a.command.type == CommandType::kCheckpoint) command["step"] = a.command.step;
  return dumpJson(Json{{"command", command}, {"generation", a.generation}});
}

Result<HeartbeatAnswer> decodeHeartbeatAnswer(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "heartbeat answer"));
  Fields f(j, "heartbeat answer");
  HeartbeatAnswer a;
  DDP_RETURN_IF_ERROR(f.getInt("generation", &a.generation, false));
  const Json* command = f.object("command");
  if (command == nullptr) return invalidArgument(f.at("command") + ": missing");
  Fields cf(*command, f.at("command"));
  std::string type;
  DDP_RETURN_IF_ERROR(cf.getString("type", &type));
  if (!parseCommandType(type, &a.command.type)) return invalidArgument(cf.at("type") + ": unknown command '" + type + "'");
  DDP_RETURN_IF_ERROR(cf.getInt("step", &a.command.step, a.command.type == CommandType::kCheckpoint));
  return a;
}

std::string encodeShardOutcome(const ShardOutcome& o) { return dumpJson(shardOutcomeJson(o)); }

// The controller's reading of a phase-1 report: rank and ok always, size and CRC when ok.
Result<ShardOutcome> decodeShardOutcome(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "shard report"));
  Fields f(j, "shard report");
  ShardOutcome o;
  DDP_RETURN_IF_ERROR(f.getInt("rank", &o.rank));
  DDP_RETURN_IF_ERROR(f.getBool("ok", &o.ok));
  DDP_RETURN_IF_ERROR(decodeEntry(f, o.ok, &o.entry));
  DDP_RETURN_IF_ERROR(f.getDouble("snapshotSeconds", &o.snapshotSeconds, false));
  DDP_RETURN_IF_ERROR(f.getDouble("writeSeconds", &o.writeSeconds, false));
  DDP_RETURN_IF_ERROR(f.getString("error", &o.error, false));
  return o;
}

std::string encodeCommitOutcome(const CommitOutcome& o) {
  Json j{{"ok", o.ok}, {"seconds", jsonNumber(o.seconds)}};
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
  return dumpJson(j);
}

// The controller's reading of rank 0's phase-2 report: size and path when ok.
Result<CommitOutcome> decodeCommitOutcome(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "commit report"));
  Fields f(j, "commit report");
  CommitOutcome o;
  DDP_RETURN_IF_ERROR(f.getBool("ok", &o.ok));
  DDP_RETURN_IF_ERROR(f.getString("error", &o.error, false));
  DDP_RETURN_IF_ERROR(f.getInt("bytes", &o.bytes, o.ok));
  DDP_RETURN_IF_ERROR(f.getString("path", &o.path, o.ok));
  DDP_RETURN_IF_ERROR(f.getDouble("seconds", &o.seconds, false));
  DDP_RETURN_IF_ERROR(decodeOnDisk(f, &o));
  return o;
}

std::string encodeCommitVerdict(const CommitVerdictWire& v) {
  static constexpr const char* kNames[] = {"pending", "commit", "abandon"};
  Json shards = Json::array();
  for (size_t rank = 0; rank < v.shards.size(); ++rank) {
    shards.push_back(Json{{"rank", rank}, {"bytes", v.shards[rank].bytes}, {"crc", v.shards[rank].crc}});
  }
  return dumpJson(Json{{"decision", kNames[static_cast<int>(v.decision)]}, {"reason", v.reason}, {"shards", shards}});
}

Result<CommitVerdictWire> decodeCommitVerdict(std::string_view json) {
  DDP_ASSIGN_OR_RETURN(Json j, parseJsonObject(json, "checkpoint decision"));
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

}  // namespace ddp::protocol
