#pragma once
// FlightRecordState: one job's flight records (controller/jobs/hang/flight_records.h): the events of
// its last hang verdicts (newest last, at most kFlightRecordEventsPerJob), and for the newest the
// members still to ask and those asked whose next heartbeat carries the record (Note [Flight
// records before the replacement]).
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/jobs/hang/flight_records.h"

namespace ddp::controller {

// What a heartbeat means to the flight records.
enum class FlightAnswer {
  kNone,      // nothing asked of this worker
  kAsk,       // answer it with the `flightRecord` command
  kReceived,  // it carried its record: the newest event changed
};

struct FlightRecordState {
  std::vector<FlightRecordEvent> events;  // newest last
  std::set<std::string> wanted;           // members to ask
  std::set<std::string> asked;            // asked, their record not in yet
  TimePoint deadline{};  // culprits are replaced once the records arrived or after this

  // A verdict's event; the members in `ask` are asked at their next heartbeat, until `until`.
  void open(FlightRecordEvent event, std::set<std::string> ask, TimePoint until);
  // A heartbeat of generation `g` from `workerId` carrying `ops` (empty: none), at wall `nowMs`.
  FlightAnswer onHeartbeat(int64_t g, const std::string& workerId, const std::vector<FlightOp>& ops, int64_t nowMs);
  // Whether asked records are still awaited at `now`.
  bool awaiting(TimePoint now) const { return (!wanted.empty() || !asked.empty()) && now < deadline; }
  // A member that registers again left its generation: it sends no record of it.
  void forget(const std::string& workerId) {
    wanted.erase(workerId);
    asked.erase(workerId);
  }
};

}  // namespace ddp::controller
