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
// Thread model: every public method is thread-safe (one mutex, never held across I/O to the
// launcher or a blocking store write... except the JobStore calls, which are short local
// SQLite transactions). start() runs one ticker thread (rendezvous deadlines, expired long
// polls, missed heartbeats, periodic persistence, launcher exit reports); stop() joins it.

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
#include "common/job_spec.h"
#include "common/status.h"
#include "common/store/store_service.h"
#include "controller/jobs/heartbeat.h"
#include "controller/launch/launcher.h"
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
  std::string workerLogFormat;                 // DDP_LOG_FORMAT for workers ("" = the job's)
  std::string workerCheckpointDir;             // DDP_CHECKPOINT_DIR override ("" = the job's)
  std::string commThreadPriority;              // DDP_COMM_THREAD_PRIORITY ("" = the job's)
};

struct RegisterRequest {
  std::string workerId, host, advertiseAddress;
  int64_t pid = 0;
};

// What a worker route's caller gets when the request names a stale generation (410).
struct Fenced {
  int64_t current = 0;
};

class JobManager {
 public:
  JobManager(JobManagerOptions options, JobStore& store, Launcher& launcher,
             const Clock& clock = SystemClock::instance());
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Loads the stored jobs (the unfinished ones become live again) and starts the ticker.
  Status start();
  void stop();

  // Launcher exit reports (any thread).
  void onWorkerExit(const WorkerExit& exit);

  // --- user side
  // Stores the job (AlreadyExists when the name is taken) and starts its workers.
  Result<JobRecord> submit(const JobSpec& spec);
  Result<JobRecord> get(const std::string& name);
  Result<std::vector<JobRecord>> list();
  // FailedPrecondition when the job already finished.
  Result<JobRecord> cancel(const std::string& name);
  // Cancels a live job, waits (bounded) for its workers to go, then removes it.
  Status remove(const std::string& name, Deadline deadline);
  Result<std::vector<JobEvent>> events(const std::string& name);
  Result<std::vector<CheckpointRecord>> checkpoints(const std::string& name);
  Result<JobSpec> spec(const std::string& name);
  bool isFinished(const std::string& name);

  // --- worker side (the caller has checked the worker token with workerTokenMatches)
  bool workerTokenMatches(const std::string& job, const std::string& token);
  Result<int64_t> registerWorker(const std::string& job, const RegisterRequest& req);
  // Replies 200 with the assignment once the worker's round closed, 204 after `wait`. The peers
  // list (O(world size) per answer) only when asked for.
  void awaitAssignment(const std::string& job, const std::string& workerId, Duration wait, bool withPeers,
                       std::shared_ptr<http::Responder> responder);
  // The key space of the job's generation `g`; Aborted carrying Fenced when stale.
  Result<std::shared_ptr<comm::KeySpace>> keySpace(const std::string& job, int64_t g, Fenced* fenced);
  Result<Command> heartbeat(const std::string& job, int64_t g, const Heartbeat& hb, Fenced* fenced);

  size_t liveJobs();

  struct Live;

 private:
  void tickLoop();
  void tickOnce();
  void handleExit(const WorkerExit& exit);
  void launch(Live& job);
  void wakeAssignments(Live& job);
  void evaluate(Live& job);
  void transition(Live& job, JobPhase next, const std::string& reason, const std::string& message);
  void event(Live& job, const std::string& type, const std::string& reason, const std::string& message);
  void persist(Live& job);
  void persistFigures(bool force);
  Live* find(const std::string& name);
  std::string assignmentJson(const Live& job, const std::string& workerId, bool withPeers) const;
  int64_t wallMs() const;

  JobManagerOptions options_;
  JobStore& store_;
  Launcher& launcher_;
  const Clock& clock_;

  std::mutex mu_;  // guards jobs_, exits_
  std::map<std::string, std::unique_ptr<Live>> jobs_;
  std::deque<WorkerExit> exits_;
  TimePoint lastPersist_{};
  TimePoint lastHeartbeatScan_{};

  std::atomic<bool> stopping_{false};
  std::mutex tickMu_;  // guards exitsPending_
  bool exitsPending_ = false;
  std::condition_variable tickCv_;
  std::thread ticker_;
};

}  // namespace ddp::controller
