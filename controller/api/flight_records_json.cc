#include "controller/api/flight_records_json.h"

#include <nlohmann/json.hpp>

#include "controller/api/job_json.h"
#include "controller/store/job_status_json.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

json secondsOrNull(double s) { return s < 0 ? json(nullptr) : json(s); }

json rankJson(const RankFlightRecord& r) {
  json last = json::array();
  for (const auto& c : r.lastHeartbeat) {
    last.push_back({{"backend", c.backend},
                    {"issued", c.issued},
                    {"lastCompleted", lastCompletedSeq(c)},
                    {"seq", c.seq},
                    {"op", c.op},
                    {"seconds", c.seconds}});
  }
  json ops = json::array();
  for (const auto& op : r.ops) {
    ops.push_back({{"backend", op.backend}, {"seq", op.seq}, {"op", op.op}, {"bytes", op.bytes}, {"state", op.state},
                   {"issuedSecondsAgo", op.issuedSecondsAgo}, {"startedSecondsAgo", secondsOrNull(op.startedSecondsAgo)},
                   {"endedSecondsAgo", secondsOrNull(op.endedSecondsAgo)}});
  }
  return {{"rank", r.rank},
          {"workerId", r.workerId},
          {"culprit", r.culprit},
          {"status", r.status},
          {"receivedTime", r.receivedMs == 0 ? json(nullptr) : json(rfc3339(r.receivedMs))},
          {"lastHeartbeat", last},
          {"ops", ops}};
}

}  // namespace

std::string flightRecordsJson(const std::vector<FlightRecordEvent>& events) {
  json a = json::array();
  for (const auto& e : events) {
    json ranks = json::array();
    for (const auto& r : e.ranks) ranks.push_back(rankJson(r));
    a.push_back({{"time", rfc3339(e.timeMs)},
                 {"reason", e.reason},
                 {"message", e.message},
                 {"generation", e.generation},
                 {"summary", summarizeFlightRecords(e)},
                 {"ranks", ranks}});
  }
  return json{{"flightRecords", a}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ddp::controller
