#pragma once
// JobManager: the controller's core. Holds every job's live state (record, spec, rendezvous,
// store key spaces, workers' heartbeats), carries out the decisions of the pure parts
// (Rendezvous, decideJob) with the launcher, and keeps the JobStore up to date.
//
// Note [Controller state and persistence]
//  - The JobStore is the record: a job is stored before POST /v1/jobs answers 201, phase
//    changes, conditions and events are written when they happen, fast-changing figures
//    (heartbeats, progress, worker steps) every `persistEvery`.
//  - Everything else is rebuilt on start (recover()): every job that is not finished gets its
//    rendezvous back from the stored generation and workers (rank order), so the workers a
//    restarted controller re-adopts keep heartbeating into the same generation and the job
//    finishes as it would have. A generation's store keys live in memory only: workers use the
//    store to set up their communicators, not while training.
//  - Waiting workers (assignment long polls) are deferred HTTP replies, woken together when
//    their round closes; no thread is held per waiter.
//
// Note [Recovery]
// While a job is Running, every evaluation (a heartbeat scan every 250 ms, a worker exit, a
// worker leaving its generation) asks the hang detector (Note [Hang verdicts]) about the active
// generation. On a verdict, with restarts left (spec.maxRestarts):
//  1. the job becomes Restarting (condition Restarting with the verdict's reason and message,
//     an event, record.restarts + 1), and the generation ends: the store of that generation
//     is cleared (blocked store calls fail) and its number is fenced;
//  2. the survivors (members not blamed) get `abort` in answer to their next heartbeat of the
//     old generation (everyone else gets 410): they abort their communicators, drop their
//     trainers and rejoin without restarting; a survivor that already left on its own (its
//     collective failed first) is put into the new round at once;
//  3. each culprit is replaced through the launcher (local: SIGKILL by pid, then a fresh
//     process in its slot), the k-th restart after an exponential backoff (0 for the first,
//     then 1 s, 2 s, ... up to 30 s: JobTimings' restartBackoffBase and Max); a launcher that
//     starts nothing (external) leaves it to whatever started the workers (a
//     WaitingForReplacement event). A culprit's process that wakes up later is fenced: its
//     heartbeats and its rejoin get 410, and it exits;
//  4. the new round closes when every slot rejoined; the job is Running again; every rank
//     loads the last committed checkpoint. When every member has finished a step of the new
//     generation, a Recovered event gives the seconds since the verdict.
// With no restarts left the verdict fails the job (its reason, and "no restarts left"). Exits
// of a process the controller replaced are recognised by pid and change nothing. A worker that
// failed for a reason no restart can fix (its final heartbeat says Failed: bad configuration,
// fenced, controller lost) still fails the job (Note [Job state machine]).
// Thread model: every public method is thread-safe. The JobManager is the registry of jobs, the
// ticker and the API's entry point; each job is one Job with its own mutex and its own logic
// (Note [One object per job], Note [Per-job locking] in job.h). A call finds the job, locks it,
// calls one of its methods, and carries out what that returns (launcher calls) with no lock
// held; only the short JobStore calls of submit and scale run under the job's lock (a change
// acknowledged is stored). start() runs one ticker thread (rendezvous deadlines, expired long
// polls, missed heartbeats, launcher exit reports) and `persistWriters` threads that write the
// jobs' batches to the store (Note [Persistence off the ticker] in job_ticker.cc); stop() joins
// them and writes what is left.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/http/http_server.h"
#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "common/store/store_service.h"
#include "controller/jobs/checkpoints/checkpoint_ledger.h"
#include "controller/jobs/admission/path_policy.h"
#include "controller/jobs/admission/worker_command_policy.h"
#include "controller/jobs/hang/hang_detector.h"
#include "controller/jobs/heartbeat.h"
#include "controller/jobs/job_timings.h"
#include "controller/jobs/lifecycle/outbox.h"
#include "controller/launch/launcher.h"
#include "controller/metrics/metrics_sink.h"
#include "controller/rendezvous/rendezvous.h"
#include "controller/store/job_store.h"

namespace ddp::controller {

struct JobManagerOptions {
  std::string controllerUrl;                   // handed to workers (DDP_CONTROLLER_URL)
  Duration persistEvery = std::chrono::seconds(2);
  Duration tick = std::chrono::milliseconds(50);
  size_t storeQuotaBytes = 64u << 20;          // per job generation
  Duration maxLongPoll = std::chrono::seconds(2);
  Duration stopGrace = std::chrono::seconds(30);  // cancel: heartbeat `stop`, then SIGTERM/SIGKILL
  JobTimings timings;                          // the other graces and scan periods
  std::string workerLogFormat;                 // DDP_LOG_FORMAT for workers ("" = the job's)
  std::string workerCheckpointDir;             // DDP_CHECKPOINT_DIR override ("" = the job's)
  // The workers share this process's filesystem (the local launcher): at start each job's
  // checkpoint catalog is set to what its directory holds (Note [Catalog follows the disk]).
  bool catalogFromDisk = false;
  // Where jobs may point their workers (Note [Allowed path roots]).
  PathPolicy paths;
  // Which spec.worker.command programs a job may run (Note [Worker commands]); default: none.
  WorkerCommandPolicy workerCommands;
  std::string commThreadPriority;              // DDP_COMM_THREAD_PRIORITY ("" = the job's)
  // Threads writing the jobs' due batches to the store (Note [Persistence off the ticker]): one
  // job slow in the store holds up one of them, never the ticker.
  int persistWriters = 4;
  MetricsSink* metrics = nullptr;              // what happens, for /metrics (nullptr: nothing)
};

// What every job reads of its controller (the JobManager's): the options, the clock and where
// figures go (Note [One object per job] in job.h).
struct JobEnv {
  const JobManagerOptions& options;
  const Clock& clock;
  MetricsSink& metrics;
};

struct RegisterRequest {
  std::string workerId, host, advertiseAddress;
  int64_t pid = 0;
  // A worker that aborted its communicator after a fault of its own says which generation it
  // left and why (Note [Recovery]); 0: a plain registration.
  int64_t leftGeneration = 0;
  std::string reason;
  // The incarnation the registering process already holds ("" for a new process; Note [Worker
  // incarnations] in worker_claim.cc).
  std::string incarnation;
  // With leftGeneration: the last step this worker completed in it (-1 unknown; Note [Recovery
  // figures] in job_recovery.cc).
  int64_t lastStep = -1;
};

// Rank 0's phase-2 report (Note [Two-phase checkpoint commit]): the MANIFEST it wrote, or why
// it could not, and the job's complete checkpoints on disk after retention.
struct CommitReport {
  int64_t step = 0;
  bool ok = false;
  std::string error;
  int64_t bytes = 0;           // every shard together
  std::string path;            // the step directory
  double seconds = 0;          // from the decision to the MANIFEST on disk
  // Steps of the job's complete checkpoints after retention; empty: not listed (catalog kept).
  std::optional<std::vector<int64_t>> onDisk;
  // Those checkpoints as catalog rows (Note [Catalog follows the disk]); empty: only `onDisk`.
  std::vector<CheckpointRecord> onDiskRecords;
};

// What a worker route's caller gets when the request names a stale generation (410).
struct Fenced {
  int64_t current = 0;
};

struct Job;  // one job's state and logic (controller/jobs/job.h: Note [One object per job])
class LockedJob;
struct JobTickFacts;
struct JobTickActions;

class JobManager {
 public:
  JobManager(JobManagerOptions options, JobStore& store, Launcher& launcher,
             const Clock& clock = SystemClock::instance());
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Loads the stored jobs (the unfinished ones become live again) and starts the ticker. Before
  // it, every change (submit, cancel, delete, scale, checkpoint, fail, replaceWorkers) answers
  // Unavailable: a standby replica (Note [Standby replicas] in kubernetes_runtime.h).
  Status start();
  void stop();
  // Unavailable before start() (Note [Standby replicas]); /readyz answers it too, except on a
  // standby (Note [Leader label] in controller/kubernetes/leader_elector.h).
  Status changesAllowed() const;

  // Launcher exit reports (any thread).
  void onWorkerExit(const WorkerExit& exit);

  // --- user side
  // Stores the job (AlreadyExists when the name is taken) and starts its workers.
  Result<JobRecord> submit(const JobSpec& spec);
  Result<JobRecord> get(const std::string& name);
  Result<std::vector<JobRecord>> list();
  // FailedPrecondition when the job already finished.
  Result<JobRecord> cancel(const std::string& name);
  // Note [Suspended jobs] (suspension.h, job_suspend.cc): stores spec.suspend true and stops the
  // workers as a cancel does; the job becomes Suspended once they are gone. Nothing more when it
  // is suspended or suspending. FailedPrecondition when it finished or is being cancelled.
  Result<JobRecord> suspend(const std::string& name);
  // Stores spec.suspend false and starts a Suspended job's workers again (Pending). Nothing when
  // it is not suspended; FailedPrecondition while its workers are still stopping or when it
  // finished.
  Result<JobRecord> resume(const std::string& name);
  // Ends a live job as Failed with this condition reason and message and stops its workers (the
  // Kubernetes run policy: a gang that was not scheduled in time). FailedPrecondition when it
  // already finished.
  Result<JobRecord> fail(const std::string& name, const std::string& reason, const std::string& message);
  // Deletes these workers and starts them again without failing the job or counting a restart (a
  // schedule timeout's Retry: pods that were never scheduled), with the other ranks of their pods
  // (Note [Several ranks per pod]). NotFound for an unknown worker, FailedPrecondition when the
  // job or the worker ended.
  Status replaceWorkers(const std::string& name, const std::vector<std::string>& workerIds);
  // Cancels a live job, waits (bounded) for its workers to go, then removes it.
  Status remove(const std::string& name, Deadline deadline);
  Result<std::vector<JobEvent>> events(const std::string& name);
  Result<std::vector<CheckpointRecord>> checkpoints(const std::string& name);
  // Asks the running workers for a checkpoint at the next step they all agree on (the
  // heartbeats' `checkpoint` command); returns the step rank 0 last reported.
  // FailedPrecondition when the job is not Running or has no checkpoint directory.
  Result<int64_t> requestCheckpoint(const std::string& name);
  Result<JobSpec> spec(const std::string& name);
  // Note [Elastic membership] (job_membership.cc): sets spec.workers.count to `workers` (within
  // [min, max], InvalidArgument naming `field` otherwise), stores it before returning, and starts
  // or retires workers to reach it. FailedPrecondition when the job finished, was cancelled, or
  // the workers of the last scale-down have not exited yet.
  Result<JobRecord> scale(const std::string& name, int workers, const std::string& field = "workers");
  // The flight records kept with the job's hang verdicts, oldest first (job_flight_records.cc):
  // the stored ones (they outlive a controller restart) and this controller's newer answers.
  // NotFound for an unknown job.
  Result<std::vector<FlightRecordEvent>> flightRecords(const std::string& name);
  bool isFinished(const std::string& name);

  // --- worker side (the caller has checked the worker token with workerTokenMatches)
  bool workerTokenMatches(const std::string& job, const std::string& token);
  // Aborted carrying Fenced when the worker left a generation that a verdict blamed it for (a
  // replacement holds its place now: Note [Recovery]).
  // `incarnation` receives the slot's nonce the worker sends on later calls. AlreadyExists when a
  // live process holds the id; Unavailable while its holder may be gone but is not seen gone.
  Result<int64_t> registerWorker(const std::string& job, const RegisterRequest& req, Fenced* fenced,
                                 std::string* incarnation = nullptr);
  // Replies 200 with the assignment once the worker's round closed (a generation after `after`),
  // 204 after `wait`. The peers list (O(world size) per answer) only when asked for.
  // `incarnation`: the poller's nonce ("" unchecked); another than the slot's is fenced (410).
  void awaitAssignment(const std::string& job, const std::string& workerId, Duration wait, bool withPeers,
                       int64_t after, std::shared_ptr<http::Responder> responder, const std::string& incarnation = "");
  // The key space of the job's generation `g`; Aborted carrying Fenced when stale.
  Result<std::shared_ptr<comm::KeySpace>> keySpace(const std::string& job, int64_t g, Fenced* fenced);
  Result<Command> heartbeat(const std::string& job, int64_t g, const Heartbeat& hb, Fenced* fenced);
  // Note [Two-phase checkpoint commit] (job_checkpoints.cc). A shard report of a stale
  // generation is Aborted carrying Fenced; the decision and the commit report are answered for
  // any generation (a commit decided before a generation ended stays valid).
  Result<CheckpointVerdict> reportShard(const std::string& job, int64_t g, int64_t step, const ShardReport& report,
                                        Fenced* fenced);
  Result<CheckpointVerdict> checkpointDecision(const std::string& job, int64_t g, int64_t step);
  Status reportCommit(const std::string& job, int64_t g, const CommitReport& report);

  size_t liveJobs();
  // Each live job's membership figures now (controller/jobs/job_gauges.cc; /metrics).
  std::vector<JobGauges> gauges();


 private:
  // The ticker and the persistence writers (job_ticker.cc, Note [Tick actions] in job_tick.h,
  // Note [Persistence off the ticker]).
  void tickLoop();
  void tickOnce();
  // With no lock held: a tick's launcher actions.
  void carryOut(const std::shared_ptr<Job>& job, const std::string& name, const JobTickActions& actions);
  // With no lock held: the job's reconcile now, off the ticker, its actions carried out before
  // it returns (a new job's first: its launch, whose failure the caller answers; Note [Tick
  // actions]). Clears the job's launchHeld.
  void reconcileNow(const std::shared_ptr<Job>& job);
  void replaceCulprit(const std::string& name, const std::string& workerId);
  void queueWrite(std::shared_ptr<Job> job);
  void writerLoop();
  void stopWriters();
  // Without the job's mu: its due batch taken and written (Note [Persistence order]); false
  // when nothing was due.
  bool persistJob(Job& job, bool periodic);
  // Without the job's mu, under its persistMu: one batch to the store.
  void writeBatch(JobRecord& record, const Outbox::Batch& batch);
  // A launch action: the launcher asked for the job's workers, the Job told how it went.
  void launch(const std::shared_ptr<Job>& job);
  // A cancel's (or suspension's) launcher actions, with no lock held.
  // (`stopNow`: stopJob with `grace`; `signal`: SIGTERM to these workers).
  void stopForCancel(const std::string& name, bool stopNow, const std::vector<std::string>& signal, Duration grace);
  // The live job, locked: FailedPrecondition when it finished and left the registry, NotFound
  // when it was never submitted; unfinished: FailedPrecondition too when it finished.
  Status live(const std::string& name, LockedJob* out);
  Status unfinished(const std::string& name, LockedJob* out);
  // At start: each stored job's catalog set to its checkpoint directory (options.catalogFromDisk).
  void reconcileCatalogs(const std::vector<JobRecord>& records);
  // The registry (jobsMu_ held only inside these).
  std::shared_ptr<Job> lookup(const std::string& name) const;
  std::vector<std::shared_ptr<Job>> snapshot() const;
  LockedJob lockJob(const std::string& name) const;
  // Requires the job's mu: marks it removed, clears its store key spaces, drops it from jobs_.
  void unregister(Job& job);
  // A stored job that is not finished, live again (start()).
  std::shared_ptr<Job> restoreJob(JobRecord rec, JobSpec spec, TimePoint now);

  JobManagerOptions options_;
  JobStore& store_;
  Launcher& launcher_;
  const Clock& clock_;
  MetricsSink& metrics_;
  const JobEnv env_;  // what every Job reads of this controller (the three above)

  mutable std::mutex jobsMu_;  // guards jobs_ only; a leaf lock (Note [Per-job locking])
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::mutex submitMu_;  // one submission at a time: the name's check, its store row, its entry
  std::mutex exitsMu_;   // guards exits_
  std::deque<WorkerExit> exits_;
  TimePoint lastPersist_{};        // the ticker's
  TimePoint lastHeartbeatScan_{};  // the ticker's

  std::mutex writeMu_;  // guards writeQueue_ and writersStop_; taken after a job's mu, a leaf
  std::condition_variable writeCv_;
  std::deque<std::shared_ptr<Job>> writeQueue_;  // jobs whose batch is due (each at most once)
  bool writersStop_ = false;
  std::vector<std::thread> writers_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
  std::mutex tickMu_;  // guards exitsPending_
  bool exitsPending_ = false;
  std::condition_variable tickCv_;
  std::thread ticker_;
};

}  // namespace ddp::controller
