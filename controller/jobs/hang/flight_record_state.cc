#include "controller/jobs/hang/flight_record_state.h"

#include <utility>

namespace ddp::controller {

void FlightRecordState::open(FlightRecordEvent event, std::set<std::string> ask, TimePoint until) {
  wanted = std::move(ask);
  asked.clear();
  deadline = until;
  events.push_back(std::move(event));
  if (events.size() > kFlightRecordEventsPerJob) events.erase(events.begin());
}

FlightAnswer FlightRecordState::onHeartbeat(int64_t g, const std::string& workerId, const std::vector<FlightOp>& ops,
                                            int64_t nowMs) {
  if (wanted.empty() && asked.empty()) return FlightAnswer::kNone;
  if (events.empty() || events.back().generation != g) {
    // A later generation: the records of the verdict's generation can no longer be had.
    wanted.clear();
    asked.clear();
    return FlightAnswer::kNone;
  }
  if (asked.erase(workerId) > 0) {
    // Its answer: the record (or nothing, from a worker that has none to send).
    for (auto& r : events.back().ranks) {
      if (r.workerId != workerId) continue;
      r.ops = ops;
      r.status = ops.empty() ? "unavailable: it sent no record" : "received";
      r.receivedMs = nowMs;
    }
    return FlightAnswer::kReceived;
  }
  if (wanted.erase(workerId) > 0) {
    asked.insert(workerId);
    return FlightAnswer::kAsk;
  }
  return FlightAnswer::kNone;
}

}  // namespace ddp::controller
