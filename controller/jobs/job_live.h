#pragma once
// The JobManager's live state of one job and its workers (internal to controller/jobs/: shared
// by job_manager.cc, the job lifecycle, job_stop.cc, job_recovery.cc, hang detection and
// recovery, and the other job_*.cc).
// Thread model: every field is guarded by JobManager::mu_.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/http/http_server.h"
#include "common/jobspec/job_spec.h"
#include "common/store/key_space.h"
#include "controller/jobs/checkpoint_ledger.h"
#include "controller/jobs/hang_detector.h"
#include "controller/jobs/job_decision.h"
#include "controller/jobs/job_manager.h"
#include "controller/rendezvous/rendezvous.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

// Answers a waiting request (a long poll) with `status` and a JSON body.
inline void replyJson(http::Responder& r, int status, const nlohmann::json& body) {
  http::Response res;
  res.status = status;
  res.body = body.dump();
  r.reply(std::move(res));
}

// What a fenced worker is told is current: the active generation, or while none is (a round
// re-forming after a verdict) the one being formed.
inline int64_t fencingGeneration(const Rendezvous& r) { return r.generation() != 0 ? r.generation() : r.nextGeneration(); }

inline Duration seconds(double s) { return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

struct Waiter {
  std::string workerId;
  std::shared_ptr<http::Responder> responder;
  TimePoint until;
  bool withPeers = false;
  int64_t after = 0;  // only a generation after this one answers
};

struct WorkerState {
  WorkerRecord rec;
  TimePoint lastSeen{};
  bool processAlive = true;
  WorkerOutcome outcome = WorkerOutcome::kRunning;
  std::string message;
  bool failureFromExit = false;
  TimePoint failedAt{};
  // Hang detection (Note [Hang verdicts]).
  TimePoint stepChangedAt{};
  std::vector<CollectiveView> collectives;
  bool leftOnItsOwn = false;  // aborted its communicator and asked to rejoin
  std::string leftMessage;
  TimePoint leftAt{};
  bool replacing = false;     // blamed by a verdict: a replacement process is on its way
  std::string incarnation;    // the holder's nonce (Note [Worker incarnations]); "" when unknown
  bool badConfigExit = false; // exited with wire::kWorkerExitBadConfig: no restart can fix it
  bool abortUnreliableSeen = false;
  int64_t checkpointAsked = 0;  // the last checkpoint request this worker was told about
  std::string lastWarning;      // the last Running heartbeat's message, recorded as an event
};

// After a controller restart: which of `workers` still run (their pids among the launcher's
// re-adopted `pids`) and how the others ended (job_workers.cc).
void markWorkersAfterRestart(const std::vector<int64_t>& pids, int64_t generation, TimePoint now,
                             std::map<std::string, WorkerState>* workers);

struct JobManager::Live {
  JobRecord record;
  JobSpec spec;
  std::optional<Rendezvous> rdzv;
  std::map<int64_t, std::shared_ptr<comm::KeySpace>> spaces;
  std::vector<Waiter> waiters;
  std::map<std::string, WorkerState> workers;  // by worker id
  bool cancelRequested = false;
  TimePoint cancelAt{};
  bool stopSent = false;
  bool dirty = false;          // phase / conditions / workers changed: write at the next tick
  bool figuresDirty = false;   // heartbeat figures changed: write within persistEvery
  std::vector<JobEvent> pendingEvents;
  std::vector<CheckpointRecord> pendingCheckpoints;
  // Flight records changed since the last persist (their store documents, by verdict time).
  std::map<int64_t, std::string> pendingFlightRecords;
  // Rank 0's last commit report's steps on disk: the stored catalog keeps only these (written
  // with the next persist). Note [Two-phase checkpoint commit].
  std::optional<std::vector<int64_t>> pendingCatalog;
  std::optional<CheckpointLedger> ledger;  // made on first use, from the spec's timeouts
  int64_t lastCheckpointStep = -1;
  int64_t lastFailedCheckpointStep = -1;  // Note [Checkpoints failing]
  int checkpointFailuresInARow = 0;        // Note [Checkpoints failing]
  // The part of every assignment of the active generation after the rank, built once when the
  // round closes: world size, generation, spec, and (second form) peers. O(N) per generation.
  std::string assignmentTail;
  std::string assignmentTailWithPeers;
  // The launcher was asked for the workers (until then no verdict: no process has existed).
  bool launched = false;
  bool stopPending = false;  // a verdict asked to stop the remaining workers (the ticker does)
  bool awaitingSettle = false;  // a worker reported its own failure: re-evaluate each tick
  // Note [Recovery].
  TimePoint generationStart{};
  int64_t abortedGeneration = 0;       // the generation a verdict ended
  std::set<std::string> survivors;     // its members that get `abort` (not 410)
  // Note [Recovery figures]: whose communicator abort of `abortsGeneration` was counted, and
  // the step each survivor said it had completed when it rejoined.
  int64_t abortsGeneration = 0;
  std::set<std::string> abortsCounted;
  std::map<std::string, int64_t> stepAtRejoin;
  std::vector<std::string> toReplace;  // culprits whose replacement is due at replaceAt
  TimePoint replaceAt{};
  bool recovering = false;             // waiting for every member to finish a step
  bool plannedChange = false;          // ... after a membership change, not a verdict (event Resumed)
  TimePoint verdictAt{};
  int64_t stepAtVerdict = 0;  // the furthest step a member of the ended generation had reported
  std::set<std::string> steppedSinceVerdict;
  std::set<std::pair<int, int64_t>> stragglersSeen;  // (rank, seq) already reported
  int64_t checkpointRequest = 0;        // on-demand checkpoint requests so far
  int64_t checkpointRequestStep = -1;   // rank 0's step when the last one was made
  // Flight records of the last verdict (job_flight_records.cc): members to ask, and members
  // asked whose next heartbeat carries the record.
  std::set<std::string> flightRecordWanted;
  std::set<std::string> flightRecordAsked;
  TimePoint flightRecordDeadline{};  // culprits are replaced once the records arrived or after this
  // Note [Elastic membership] (job_membership.cc).
  std::set<std::string> retired;              // removed by a scale-down (slots >= count): refused
  std::set<std::string> stoppedSlots;         // retired workers whose process exited
  TimePoint retireKillAt = TimePoint::max();  // retired workers still alive then are SIGKILLed
  std::optional<TimePoint> firstLateJoinAt;   // the first late joiner of the active generation
  std::vector<std::string> lastMembers;       // the previous generation's members, by rank
  std::string membershipNote;                 // why the next generation's membership changes
  std::set<std::string> steppedInGeneration;  // members that reported a step in the active one
};

// After a generation ended (a verdict, Note [Recovery]; a planned change, Note [Elastic
// membership]): its survivors are Rejoining, those that had already left on their own join the
// open round. Returns the survivors whose process is alive, for Rendezvous::expect.
inline std::vector<std::string> rejoinSurvivors(JobManager::Live& job, TimePoint now) {
  std::vector<std::string> alive;
  for (const auto& id : job.survivors) {
    WorkerState& w = job.workers[id];
    w.rec.state = "Rejoining";
    if (w.leftOnItsOwn) job.rdzv->join(id, now);  // already waiting for the next generation
    w.leftOnItsOwn = false;
    if (w.processAlive) alive.push_back(id);
  }
  return alive;
}

// How long the next round waits for a survivor still tearing down: the last call and hangSeconds
// more. A survivor's teardown lets a checkpoint write in progress finish (fsync) and joins its
// communicator's threads, which on a busy machine or a slow disk takes seconds; it sends no
// heartbeat meanwhile (its generation ended). A survivor whose process exits leaves the round at
// once; one alive but not back after as long as a hang takes to be declared is left out.
inline Duration survivorWait(const JobSpec& spec) {
  return seconds(spec.timeouts.lastCallSeconds + spec.timeouts.hangSeconds);
}

}  // namespace ddp::controller
