// Flight records of a hang (controller/jobs/hang/flight_records.h): the Job's methods that ask the
// live members of a generation a verdict ended for their records and keep them (in the job's
// FlightRecordState, controller/jobs/hang/flight_record_state.h, and its outbox to the store).
#include <algorithm>
#include <set>

#include "common/log.h"

#include "controller/jobs/job.h"

namespace ddp::controller {

void Job::requestFlightRecords(const RendezvousRound& round, const HangVerdict& verdict) {
  FlightRecordEvent e;
  e.timeMs = wallMs();
  e.reason = faultReasonName(verdict.reason);
  e.message = verdict.message;
  e.generation = round.generation;
  std::set<std::string> ask;
  for (int r = 0; r < round.worldSize(); ++r) {
    const std::string& id = round.members[static_cast<size_t>(r)];
    const WorkerState& w = workers[id];
    RankFlightRecord rec;
    rec.rank = r;
    rec.workerId = id;
    rec.culprit = std::find(verdict.culprits.begin(), verdict.culprits.end(), r) != verdict.culprits.end();
    rec.lastHeartbeat = w.collectives;
    if (rec.culprit) {
      rec.status = "unavailable: blamed by the verdict (its last heartbeat is its view)";
    } else if (w.leftOnItsOwn) {
      rec.status = "unavailable: it had aborted its communicator already";
    } else if (!w.processAlive || w.outcome != WorkerOutcome::kRunning) {
      rec.status = "unavailable: it is not running";
    } else {
      rec.status = "requested";
      ask.insert(id);
    }
    e.ranks.push_back(std::move(rec));
  }
  // Note [Flight records before the replacement]: at most two heartbeat periods (a rank waiting
  // in a collective beats every 200 ms), clamped to the timings' bounds (1 s and 5 s by default).
  const Duration period = seconds(spec.timeouts.heartbeatSeconds);
  const TimePoint until = env.clock.now() + std::clamp<Duration>(2 * period, env.options.timings.flightRecordWaitMin,
                                                              env.options.timings.flightRecordWaitMax);
  outbox.flightRecords[e.timeMs] = encodeFlightRecordEvent(e);
  flight.open(std::move(e), std::move(ask), until);
}

bool Job::flightRecordCommand(int64_t g, const Heartbeat& hb) {
  switch (flight.onHeartbeat(g, hb.workerId, hb.flightRecord, wallMs())) {
    case FlightAnswer::kAsk: return true;
    case FlightAnswer::kReceived: {
      const FlightRecordEvent& last = flight.events.back();
      outbox.flightRecords[last.timeMs] = encodeFlightRecordEvent(last);
      return false;
    }
    case FlightAnswer::kNone: return false;
  }
  return false;
}

bool Job::awaitingFlightRecords() const { return flight.awaiting(env.clock.now()); }

}  // namespace ddp::controller
