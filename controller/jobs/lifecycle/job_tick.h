#pragma once
// The job's reconcile (pure, injected time), like decideJob and detectHang: reconcileTick, what
// the ticker does with one job at one tick, from what it observed of the job (JobTickFacts); and
// answerHeartbeat, the command a worker's heartbeat is answered with. The Job gathers the facts
// and records the decision under its lock (job.cc: Job::tickFacts, Job::recordTick); the
// JobManager carries the actions out outside it (job_ticker.cc).
//
// Note [Tick actions]
// Each tick, after the job's state advanced (rendezvous deadlines, expired long polls, the hang
// scan: job_manager.cc advanceJob), one job may need:
//  - its workers launched (launcher ensureWorkers): a job never launched (submitted, resumed, or
//    restored before its rendezvous closed) unless it ended. The call that registers a job
//    (submit, resume, start) holds its launch back and runs the job's first reconcile itself,
//    at once, so a launch failure is in that call's answer, as it always was;
//  - its workers stopped (launcher stopJob, SIGTERM then SIGKILL after timings.killGrace): a
//    cancel whose stopGrace ran out (once), or a decision that asked for it (a verdict with no
//    restarts left, a failure, the job done with processes left);
//  - while it stops (cancelled or ended): its workers silent past the heartbeat window killed at
//    once (Note [Stopping an unresponsive worker] in job_decision.h);
//  - the workers a scale-down retired still running once their grace ran out, killed (Note
//    [Elastic membership]);
//  - the culprits of a verdict replaced once their backoff is over and the survivors' flight
//    records arrived (Note [Flight records before the replacement]), unless the job ended or
//    was cancelled meanwhile (Note [Recovery]);
//  - its outbox (record, events, checkpoint rows, flight records) written to the store when
//    something is due and no write of it is under way (Note [Persistence off the ticker] in
//    job_ticker.cc);
//  - a finished job whose processes are gone, with nothing left to write or answer, dropped from
//    the registry (its record is the store's from then on).
// Thread model: pure function.

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/protocol/worker_messages.h"
#include "controller/jobs/lifecycle/job_decision.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

using protocol::Command;
using protocol::CommandType;

struct JobTickFacts {
  TimePoint now{};
  JobPhase phase = JobPhase::kPending;
  bool cancelRequested = false;
  bool cancelStopDue = false;  // LifecycleState::stopDue: the cancel's stopGrace ran out
  bool stopPending = false;    // a decision asked to stop the remaining workers
  bool launchDue = false;      // LifecycleState::launchDue: the workers were never launched
  std::vector<WorkerFacts> alive;  // the job's worker processes still alive (id, outcome, lastSeen)
  Duration heartbeatWindow{};      // heartbeatSeconds x heartbeatMisses
  bool retireKillDue = false;      // a scale-down's grace ran out (MembershipState::retireKillAt)
  std::vector<std::string> retiredAlive;
  std::vector<std::string> toReplace;   // culprits waiting for a replacement
  bool replaceBackoffOver = false;      // RecoveryState::replacementsDue
  bool awaitingFlightRecords = false;   // FlightRecordState::awaiting
  bool persistDue = false;   // Outbox::due: something is to be written now
  bool persisting = false;   // a write of this job is queued or under way
  bool anyProcessAlive = false;
  bool waitersLeft = false;  // long polls not answered yet
};

struct JobTickActions {
  bool launch = false;          // launcher ensureWorkers(the job's launch request)
  bool stopJob = false;         // launcher stopJob(timings.killGrace)
  bool cancelStopSent = false;  // ... because of the cancel: it is not sent again
  std::vector<std::string> killUnresponsive;  // SIGKILL; each is Stopped, with an event
  std::vector<std::string> killRetired;       // SIGKILL
  std::vector<std::string> replace;           // launcher replaceWorker; toReplace is emptied
  bool persist = false;  // the outbox's batch to a persistence writer
  bool drop = false;     // the job leaves the registry

  // No launcher call (persist and drop are the ticker's own).
  bool empty() const {
    return !launch && !stopJob && killUnresponsive.empty() && killRetired.empty() && replace.empty();
  }
};

JobTickActions reconcileTick(const JobTickFacts& facts);

// What answerHeartbeat is told about one heartbeat of the active generation.
struct HeartbeatFacts {
  bool final = false;              // the worker says it ended (Succeeded, Stopped, Failed)
  bool flightRecordAsked = false;  // the worker is to send its flight record (asked once)
  bool cancelRequested = false;
  JobPhase phase = JobPhase::kPending;
  int64_t checkpointAsked = 0;     // the last checkpoint request this worker was told about
  int64_t checkpointRequests = 0;  // the job's requests so far (CheckpointState::requests)
  int64_t checkpointStep = 0;      // the step the last request named
};

// The command in a heartbeat's answer, by priority: the flight record a verdict asked for,
// `stop` for a cancelled or ended job, a checkpoint request this worker was not told about yet
// (each member is told once; the ranks agree on the step themselves), else none. A final
// heartbeat is asked for nothing but, when cancelled, told `stop`.
Command answerHeartbeat(const HeartbeatFacts& facts);

}  // namespace ddp::controller
