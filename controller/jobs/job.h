#pragma once
// Job: the controller's state of one job and its workers (Note [One object per job]); internal
// to controller/jobs/ (the JobManager's job_*.cc slices).
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
#include "controller/jobs/checkpoint_ledger.h"
#include "controller/jobs/hang_detector.h"
#include "controller/jobs/job_decision.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/state/checkpoint_state.h"
#include "controller/jobs/state/flight_record_state.h"
#include "controller/jobs/state/lifecycle_state.h"
#include "controller/jobs/state/membership_state.h"
#include "controller/jobs/state/outbox.h"
#include "controller/jobs/state/recovery_state.h"
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

// Note [One object per job]
// Each job the controller follows is one Job: its record and spec, its rendezvous and store key
// spaces, its workers, its waiting long polls, and the rest of its state as named sub-states
// (controller/jobs/state/): lifecycle (launch, cancel, stops owed), recovery (Note [Recovery]),
// membership (Note [Elastic membership]), checkpoints (Note [Two-phase checkpoint commit], Note
// [Checkpoints failing]), flight records (Note [Flight records before the replacement]) and the
// outbox of what is still to be written to the JobStore. Each sub-state is a small value type
// with its own tests; the JobManager's job_*.cc slices carry out the decisions of the pure cores
// (Rendezvous, decideJob, detectHang, decideMembership, CheckpointLedger, reconcileTick) on it.
struct Job {
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
  // A job's outbox is written to the store outside its mu, from two threads: the ticker and any
  // API call that reads the store (events, checkpoints). `persistMu` is held from taking a batch
  // to the end of writing it (taken before mu), so the job's batches reach the store in the
  // order they were taken: a batch taken later and written first would be overwritten by the
  // older one (JobManagerPersistTest). Other jobs' batches do not wait for it.
  std::mutex mu;
  std::mutex persistMu;
  bool removed = false;  // erased from the registry (deleted, or finished and written): gone
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

// After a generation ended (a verdict, Note [Recovery]; a planned change, Note [Elastic
// membership]): its survivors are Rejoining, those that had already left on their own join the
// open round. Returns the survivors whose process is alive, for Rendezvous::expect.
inline std::vector<std::string> rejoinSurvivors(Job& job, TimePoint now) {
  std::vector<std::string> alive;
  for (const auto& id : job.recovery.survivors) {
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
