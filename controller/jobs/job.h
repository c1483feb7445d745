#pragma once
// Job: the controller's state of one job and its workers, and the per-job logic on it (Note [One
// object per job]); internal to controller/jobs/ (the JobManager holds one per job).
// Thread model: every field of a Job is guarded by its own `mu` (Note [Per-job locking]);
// LockedJob holds one.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/http/http_server.h"
#include "common/jobspec/job_spec.h"
#include "common/store/key_space.h"
#include "controller/jobs/checkpoints/checkpoint_ledger.h"
#include "controller/jobs/hang/hang_detector.h"
#include "controller/jobs/lifecycle/job_decision.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/lifecycle/job_tick.h"
#include "controller/jobs/checkpoints/checkpoint_state.h"
#include "controller/jobs/hang/flight_record_state.h"
#include "controller/jobs/lifecycle/lifecycle_state.h"
#include "controller/jobs/membership/membership_state.h"
#include "controller/jobs/lifecycle/outbox.h"
#include "controller/jobs/hang/recovery_state.h"
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

// Milliseconds since the Unix epoch (the record's times).
int64_t wallMs();

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
  bool badConfigExit = false; // exited with protocol::kWorkerExitBadConfig: no restart can fix it
  bool abortUnreliableSeen = false;
  int64_t checkpointAsked = 0;  // the last checkpoint request this worker was told about
  std::string lastWarning;      // the last Running heartbeat's message, recorded as an event
};

// After a controller restart: which of `workers` still run (their pids among the launcher's
// re-adopted `pids`) and how the others ended (job_workers.cc).
void markWorkersAfterRestart(const std::vector<int64_t>& pids, int64_t generation, TimePoint now,
                             std::map<std::string, WorkerState>* workers);

// Note [One object per job]
// Each job the controller follows is one Job: its record and spec, its rendezvous and store key
// spaces, its workers, its waiting long polls, and the rest of its state as named sub-states,
// each in the room of its pure core: lifecycle (lifecycle/: launch, cancel, stops owed),
// recovery (hang/: Note [Recovery]), membership (membership/: Note [Elastic membership]),
// checkpoints (checkpoints/: Note [Two-phase checkpoint commit], Note [Checkpoints failing]),
// flight records (hang/: Note [Flight records before the replacement]) and the outbox of what is
// still to be written to the JobStore (lifecycle/). Each sub-state is a small value type
// with its own tests. The per-job logic is the Job's methods (job.cc the lifecycle and the
// tick, job_workers.cc the worker routes, job_stop.cc cancel/fail/replace, job_recovery.cc,
// job_membership.cc, job_checkpoints.cc, job_flight_records.cc): each applies the decisions of a
// pure core (Rendezvous, decideJob, detectHang, decideMembership, CheckpointLedger,
// reconcileTick, answerHeartbeat) to the job's state and returns what is to be done outside the
// lock (launcher calls, store writes). None of them calls the launcher or the JobStore, except
// scale(), whose spec write is acknowledged only once stored. The JobManager is the registry,
// the ticker and the API's entry point: it finds and locks the job, calls one method, and
// carries the returned actions out with no lock held.
struct Job {
  explicit Job(const JobEnv& e) : env(e) {}
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const JobEnv& env;  // the controller's options, clock and metrics (outlives every job)
  JobRecord record;
  JobSpec spec;
  std::optional<Rendezvous> rdzv;
  std::map<int64_t, std::shared_ptr<comm::KeySpace>> spaces;
  std::vector<Waiter> waiters;
  std::map<std::string, WorkerState> workers;  // by worker id
  // The part of every assignment of the active generation after the rank, built once when the
  // round closes: world size, generation, spec, and (second form) peers. O(N) per generation.
  std::string assignmentTail;
  std::string assignmentTailWithPeers;
  TimePoint generationStart{};  // when the active generation formed (hang detection's origin)

  LifecycleState lifecycle;
  RecoveryState recovery;
  MembershipState membership;
  CheckpointState checkpoints;
  FlightRecordState flight;
  Outbox outbox;

  // Note [Per-job locking]
  // `mu` guards every field above: a job's routes, its ticks and its persistence take only its
  // own lock, so one job slow in the store (or with thousands of workers) holds up no other.
  // JobManager::jobsMu_ guards only the registry (name -> Job) and is a leaf: nothing is taken
  // while it is held, and a job's mu may be held while it is taken (unregister). The launcher is
  // called with no lock held (Note [Tick actions] in job_tick.h).
  //
  // Note [Persistence order]
  // A job's outbox is written to the store outside its mu, from the persistence writers (Note
  // [Persistence off the ticker] in job_ticker.cc) and any API call that reads the store (events,
  // checkpoints). `persistMu` is held from taking a batch to the end of writing it (taken before
  // mu), so the job's batches reach the store in the order they were taken: a batch taken later
  // and written first would be overwritten by the older one (JobManagerPersistTest). Other
  // jobs' batches do not wait for it.
  std::mutex mu;
  std::mutex persistMu;
  bool removed = false;  // erased from the registry (deleted, or finished and written): gone
  // Queued for, or being written by, a persistence writer (guarded by mu): queued at most once.
  bool persistQueued = false;
  // A periodic tick found the job's previous batch still being written: the next tick writes the
  // periodic figures (progress) instead, so they are not left until the clock moves on.
  bool periodicOwed = false;

  // Every method below requires `mu` held.
  // --- the lifecycle (job.cc)
  void event(const std::string& type, const std::string& reason, const std::string& message);
  void transition(JobPhase next, const std::string& reason, const std::string& message);
  // Asks the pure cores where the job stands (recovery, a finished change, decideJob) and acts.
  void evaluate();
  // A closed round: its generation's store and ranks, and the waiting members answered.
  void wakeAssignments();
  std::string assignmentJson(const std::string& workerId, bool withPeers) const;
  // A job restored by a restarted controller: its rendezvous from the stored generation and
  // workers (Note [Controller state and persistence] in job_manager.h).
  void restore(TimePoint now, const std::vector<int64_t>& livePids, int64_t lastCheckpoint);
  // A submitted job's first, empty round (a resumed job's: after its last generation).
  void openRendezvous(int64_t after = 0);
  JobLaunch launchRequest() const;
  // The launcher answered launchRequest() with `st`: true when the job must be stopped again
  // (cancelled while its workers were being started).
  bool noteLaunched(const JobLaunch& l, const Status& st);
  // Note [Persistence order]: the record and the batch to write now, if any.
  std::optional<std::pair<JobRecord, Outbox::Batch>> takeBatch(bool periodic);
  bool anyProcessAlive() const;
  JobGauges gauges(TimePoint now) const;

  // --- the tick (job.cc, Note [Tick actions] in job_tick.h)
  // The job's state moves on to `now` (`scan`: the hang scan's period passed).
  void advance(TimePoint now, bool scan);
  // `periodic`: persistEvery passed (the heartbeat figures are due too).
  JobTickFacts tickFacts(TimePoint now, bool periodic) const;
  void recordTick(const JobTickActions& actions, TimePoint now);
  // A stopping job's worker silent past the heartbeat window, killed: Stopped, with an event
  // (Note [Stopping an unresponsive worker] in job_decision.h).
  void markUnresponsiveKilled(const std::string& workerId, TimePoint now);

  // --- stopping from outside (job_stop.cc)
  // FailedPrecondition naming why the job takes no new work (cancelled or finished).
  Status open() const;
  struct CancelActions {
    bool stopNow = false;             // launcher stopJob(cancelStopGrace())
    std::vector<std::string> signal;  // SIGTERM: checkpoint and stop
  };
  // `suspend`: a suspension's stop (Note [Suspended jobs]); a cancel of a suspended job ends it.
  CancelActions cancel(bool suspend = false);

  // --- suspend and resume (job_suspend.cc, Note [Suspended jobs] in suspension.h)
  // Stopped with nothing to launch or stop: a job submitted or restored Suspended.
  void markSuspended();
  // Stores the spec with spec.suspend = `suspend` (durable before the caller answers).
  Status storeSuspend(bool suspend, JobStore& store);
  // This fresh job takes over Suspended `old`'s record, spec and checkpoints, Pending.
  void resumeFrom(Job& old);
  Duration cancelStopGrace() const;
  void fail(const std::string& reason, const std::string& message);
  // Marks `ids` as being replaced (their exits are a replacement's); NotFound / FailedPrecondition.
  Status markReplacing(const std::vector<std::string>& ids);
  // The launcher could not replace `id` (`st`): a warning, or the job fails.
  void replacementFailed(const std::string& id, const Status& st);

  // --- the worker routes (job_workers.cc; JobManager's worker side says what each answers)
  Result<int64_t> registerWorker(const RegisterRequest& req, Fenced* fenced, std::string* incarnation);
  void awaitAssignment(const std::string& workerId, Duration wait, bool withPeers, int64_t after,
                       std::shared_ptr<http::Responder> responder, const std::string& incarnation);
  Result<std::shared_ptr<comm::KeySpace>> keySpace(int64_t g, Fenced* fenced);
  Result<Command> heartbeat(int64_t g, const Heartbeat& hb, Fenced* fenced);
  void handleExit(const WorkerExit& exit);

  // --- hang detection and recovery (job_recovery.cc, Note [Recovery])
  bool detectAndRecover();  // true when a verdict was acted on
  void recover(const HangVerdict& verdict);
  void countAbort(const std::string& workerId, int64_t g);  // Note [Recovery figures]
  void noteRecovered(const std::string& workerId, const Heartbeat& hb);
  // After a generation ended: its survivors are Rejoining, those that had already left on their
  // own join the open round. Returns the survivors whose process is alive, for Rendezvous::expect.
  std::vector<std::string> rejoinSurvivors(TimePoint now);

  // --- elastic membership (job_membership.cc, Note [Elastic membership])
  struct ScaleActions {
    std::optional<JobLaunch> up;       // launcher ensureWorkers
    std::vector<std::string> restart;  // launcher replaceWorker: re-added slots a scale-down stopped
    std::vector<std::string> signal;   // SIGTERM: retired workers that are no members
  };
  // Sets spec.workers.count to `workers`, its spec written through `store` before it returns.
  Result<ScaleActions> scale(int workers, int maxWorkersPerJob, const std::string& field, JobStore& store);
  bool evaluateMembership();
  std::vector<std::string> addSlots(int from, int to);
  std::vector<std::string> retireSlots(int to);
  void changeMembership(const std::string& reason, const std::string& message);
  void noteMembership();
  bool handleRetiredExit(const WorkerExit& exit);
  bool finishedDuringChange();

  // --- checkpoints (job_checkpoints.cc, Note [Two-phase checkpoint commit])
  CheckpointLedger& ledger();
  void noteLedgerChanges(const std::vector<LedgerChange>& changes);
  void relearnShardReport(int64_t g, const LastShardReport& shard);
  void expireCheckpoints(TimePoint now);
  Result<CheckpointVerdict> reportShard(int64_t g, int64_t step, const ShardReport& report, Fenced* fenced);
  Result<CheckpointVerdict> checkpointDecision(int64_t g, int64_t step);
  Status reportCommit(int64_t g, const CommitReport& report);
  Result<int64_t> requestCheckpoint();
  void noteCheckpointOutcome(int64_t step, bool committed, const std::string& reason, const std::string& message);

  // --- flight records (job_flight_records.cc)
  void requestFlightRecords(const RendezvousRound& round, const HangVerdict& verdict);
  bool flightRecordCommand(int64_t g, const Heartbeat& hb);
  bool awaitingFlightRecords() const;

 private:
  Result<Command> staleHeartbeat(int64_t g, const Heartbeat& hb, Fenced* fenced);
};

// A job with its mu held; empty when the job is not live (JobManager::lockJob).
class LockedJob {
 public:
  LockedJob() = default;
  explicit LockedJob(std::shared_ptr<Job> job) : job_(std::move(job)), lock_(job_->mu) {}
  explicit operator bool() const { return job_ != nullptr; }
  Job* operator->() const { return job_.get(); }
  Job& operator*() const { return *job_; }

 private:
  std::shared_ptr<Job> job_;
  std::unique_lock<std::mutex> lock_;  // after job_: released before the job is let go
};

// How long the next round waits for a survivor still tearing down: the last call and hangSeconds
// more. A survivor's teardown lets a checkpoint write in progress finish (fsync) and joins its
// communicator's threads, which on a busy machine or a slow disk takes seconds; it sends no
// heartbeat meanwhile (its generation ended). A survivor whose process exits leaves the round at
// once; one alive but not back after as long as a hang takes to be declared is left out.
inline Duration survivorWait(const JobSpec& spec) {
  return seconds(spec.timeouts.lastCallSeconds + spec.timeouts.hangSeconds);
}

}  // namespace ddp::controller
