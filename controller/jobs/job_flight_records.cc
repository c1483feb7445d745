// Flight records of a hang (controller/jobs/flight_records.h): the JobManager's methods that
// ask the live members of a generation a verdict ended for their records and keep them.
#include <algorithm>

#include "common/log.h"

#include "controller/jobs/job_live.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

void JobManager::requestFlightRecords(Live& job, const RendezvousRound& round, const HangVerdict& verdict) {
  FlightRecordEvent e;
  e.timeMs = wallMs();
  e.reason = faultReasonName(verdict.reason);
  e.message = verdict.message;
  e.generation = round.generation;
  job.flightRecordWanted.clear();
  job.flightRecordAsked.clear();
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
      job.flightRecordWanted.insert(id);
    }
    e.ranks.push_back(std::move(rec));
  }
  // Note [Flight records before the replacement]: at most two heartbeat periods (a rank waiting
  // in a collective beats every 200 ms), at least 1 s, at most 5 s.
  const Duration period = seconds(job.spec.timeouts.heartbeatSeconds);
  job.flightRecordDeadline =
      clock_.now() + std::clamp<Duration>(2 * period, std::chrono::seconds(1), std::chrono::seconds(5));
  job.pendingFlightRecords[e.timeMs] = encodeFlightRecordEvent(e);
  auto& events = flightRecords_[job.record.name];
  events.push_back(std::move(e));
  if (events.size() > kFlightRecordEventsPerJob) events.erase(events.begin());
}

bool JobManager::flightRecordCommand(Live& job, int64_t g, const Heartbeat& hb) {
  if (job.flightRecordWanted.empty() && job.flightRecordAsked.empty()) return false;
  auto it = flightRecords_.find(job.record.name);
  if (it == flightRecords_.end() || it->second.empty() || it->second.back().generation != g) {
    // A later generation: the records of the verdict's generation can no longer be had.
    job.flightRecordWanted.clear();
    job.flightRecordAsked.clear();
    return false;
  }
  if (job.flightRecordAsked.erase(hb.workerId) > 0) {
    // Its answer: the record (or nothing, from a worker that has none to send).
    for (auto& r : it->second.back().ranks) {
      if (r.workerId != hb.workerId) continue;
      r.ops = hb.flightRecord;
      r.status = hb.flightRecord.empty() ? "unavailable: it sent no record" : "received";
      r.receivedMs = wallMs();
    }
    job.pendingFlightRecords[it->second.back().timeMs] = encodeFlightRecordEvent(it->second.back());
    return false;
  }
  if (job.flightRecordWanted.erase(hb.workerId) > 0) {
    job.flightRecordAsked.insert(hb.workerId);
    return true;
  }
  return false;
}

bool JobManager::awaitingFlightRecords(const Live& job) const {
  return (!job.flightRecordWanted.empty() || !job.flightRecordAsked.empty()) && clock_.now() < job.flightRecordDeadline;
}

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
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flightRecords_.find(name);
    if (!stored.isOk() && it == flightRecords_.end() && find(name) == nullptr) return stored.status();
    if (it != flightRecords_.end()) {
      for (const auto& e : it->second) byTime[e.timeMs] = e;
    }
  }
  std::vector<FlightRecordEvent> out;
  for (auto& [t, e] : byTime) out.push_back(std::move(e));
  if (out.size() > kFlightRecordEventsPerJob) out.erase(out.begin(), out.end() - kFlightRecordEventsPerJob);
  return out;
}

}  // namespace ddp::controller
