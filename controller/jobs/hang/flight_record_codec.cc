// The job store's form of a hang's flight records (encodeFlightRecordEvent /
// decodeFlightRecordEvent in flight_records.h): every field, times in Unix milliseconds.
#include <nlohmann/json.hpp>

#include "controller/jobs/hang/flight_records.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

json viewJson(const CollectiveView& c) {
  return {{"backend", c.backend}, {"issued", c.issued}, {"seq", c.seq}, {"op", c.op}, {"seconds", c.seconds}};
}

json opJson(const FlightOp& op) {
  return {{"backend", op.backend},
          {"seq", op.seq},
          {"op", op.op},
          {"bytes", op.bytes},
          {"state", op.state},
          {"issuedSecondsAgo", op.issuedSecondsAgo},
          {"startedSecondsAgo", op.startedSecondsAgo},
          {"endedSecondsAgo", op.endedSecondsAgo}};
}

}  // namespace

std::string encodeFlightRecordEvent(const FlightRecordEvent& e) {
  json ranks = json::array();
  for (const RankFlightRecord& r : e.ranks) {
    json last = json::array(), ops = json::array();
    for (const auto& c : r.lastHeartbeat) last.push_back(viewJson(c));
    for (const auto& op : r.ops) ops.push_back(opJson(op));
    ranks.push_back({{"rank", r.rank},
                     {"workerId", r.workerId},
                     {"culprit", r.culprit},
                     {"status", r.status},
                     {"lastHeartbeat", last},
                     {"ops", ops},
                     {"receivedMs", r.receivedMs}});
  }
  return json{{"timeMs", e.timeMs},
              {"reason", e.reason},
              {"message", e.message},
              {"generation", e.generation},
              {"ranks", ranks}}
      .dump();
}

Result<FlightRecordEvent> decodeFlightRecordEvent(const std::string& text) {
  try {
    const json j = json::parse(text);
    FlightRecordEvent e;
    e.timeMs = j.at("timeMs").get<int64_t>();
    e.reason = j.at("reason").get<std::string>();
    e.message = j.at("message").get<std::string>();
    e.generation = j.at("generation").get<int64_t>();
    for (const json& rj : j.at("ranks")) {
      RankFlightRecord r;
      r.rank = rj.at("rank").get<int>();
      r.workerId = rj.at("workerId").get<std::string>();
      r.culprit = rj.at("culprit").get<bool>();
      r.status = rj.at("status").get<std::string>();
      r.receivedMs = rj.at("receivedMs").get<int64_t>();
      for (const json& c : rj.at("lastHeartbeat")) {
        r.lastHeartbeat.push_back(CollectiveView{c.at("backend").get<std::string>(), c.at("issued").get<int64_t>(),
                                                 c.at("seq").get<int64_t>(), c.at("op").get<std::string>(),
                                                 c.at("seconds").get<double>()});
      }
      for (const json& o : rj.at("ops")) {
        FlightOp op;
        op.backend = o.at("backend").get<std::string>();
        op.seq = o.at("seq").get<int64_t>();
        op.op = o.at("op").get<std::string>();
        op.bytes = o.at("bytes").get<int64_t>();
        op.state = o.at("state").get<std::string>();
        op.issuedSecondsAgo = o.at("issuedSecondsAgo").get<double>();
        op.startedSecondsAgo = o.at("startedSecondsAgo").get<double>();
        op.endedSecondsAgo = o.at("endedSecondsAgo").get<double>();
        r.ops.push_back(std::move(op));
      }
      e.ranks.push_back(std::move(r));
    }
    return e;
  } catch (const json::exception& ex) {
    return dataLoss(std::string("flight record document: ") + ex.what());
  }
}

int64_t lastCompletedSeq(const CollectiveView& c) {
  if (c.seq >= 0) return c.seq - 1;  // everything before the oldest unfinished op completed
  return c.issued;                    // nothing unfinished: the last issued one completed (-1: none)
}

}  // namespace ddp::controller
