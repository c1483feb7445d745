// Flight records of a hang (controller/jobs/flight_records.h): the JobManager's methods that
// ask the live members of a generation a verdict ended for their records and keep them (in the
// job's FlightRecordState, controller/jobs/state/flight_record_state.h, and the job store).
#include <algorithm>
#include <set>

#include "common/log.h"

#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

void JobManager::requestFlightRecords(Job& job, const RendezvousRound& round, const HangVerdict& verdict) {
  FlightRecordEvent e;
  e.timeMs = wallMs();
  e.reason = faultReasonName(verdict.reason);
  e.message = verdict.message;
  e.generation = round.generation;
  std::set<std::string> ask;
  for (int r = 0; r < round.worldSize(); ++r) {
    const std::string& id = round.members[static_cast<size_t>(r)];
    const WorkerState& w = job.workers[id];
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
  const Duration period = seconds(job.spec.timeouts.heartbeatSeconds);
  const TimePoint until = clock_.now() + std::clamp<Duration>(2 * period, options_.timings.flightRecordWaitMin,
                                                              options_.timings.flightRecordWaitMax);
  job.outbox.flightRecords[e.timeMs] = encodeFlightRecordEvent(e);
  job.flight.open(std::move(e), std::move(ask), until);
}

bool JobManager::flightRecordCommand(Job& job, int64_t g, const Heartbeat& hb) {
  switch (job.flight.onHeartbeat(g, hb.workerId, hb.flightRecord, wallMs())) {
    case FlightAnswer::kAsk: return true;
    case FlightAnswer::kReceived: {
      const FlightRecordEvent& last = job.flight.events.back();
      job.outbox.flightRecords[last.timeMs] = encodeFlightRecordEvent(last);
      return false;
    }
    case FlightAnswer::kNone: return false;
  }
  return false;
}

bool JobManager::awaitingFlightRecords(const Job& job) const { return job.flight.awaiting(clock_.now()); }

Result<std::vector<FlightRecordEvent>> JobManager::flightRecords(const std::string& name) {
  // The stored ones (they outlive a controller restart), overridden by this controller's own
  // (newer answers may not be written yet), by verdict time.
  std::map<int64_t, FlightRecordEvent> byTime;
  auto stored = store_.flightRecords(name);
  if (!stored.isOk() && stored.status().code() != StatusCode::kNotFound) return stored.status();
  if (stored.isOk()) {
    for (const std::string& doc : *stored) {
      auto e = decodeFlightRecordEvent(doc);
      if (!e.isOk()) {
        DDP_LOG(Warning) << "job " << name << ": a stored flight record is unreadable: " << e.status().message();
        continue;
      }
      byTime[e->timeMs] = std::move(*e);
    }
  }
  {
    LockedJob job = lockJob(name);
    if (!stored.isOk() && !job) return stored.status();
    if (job) {
      for (const auto& e : job->flight.events) byTime[e.timeMs] = e;
    }
  }
  std::vector<FlightRecordEvent> out;
  for (auto& [t, e] : byTime) out.push_back(std::move(e));
  if (out.size() > kFlightRecordEventsPerJob) out.erase(out.begin(), out.end() - kFlightRecordEventsPerJob);
  return out;
}

}  // namespace ddp::controller
