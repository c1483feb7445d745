#pragma once
// LocalLauncher: runs a job's workers as processes on this host (the service's default
// launcher, and `ddpctl run`'s with tieToParent).
//
// State directory layout (STATE = options.stateDir):
//   STATE/jobs/<job>/logs/<workerId>.log      stdout+stderr, appended (Note [Log rotation])
//   STATE/jobs/<job>/logs/<workerId>.log.1    the part kept by the last rotation
//   STATE/jobs/<job>/workers/<workerId>.pid   pid + start time (Note [Pid files and process identity])
//
// Note [Launcher threads]
//  - The spawner thread (a SerialExecutor) carries out every change that may start a process:
//    ensureWorkers, replaceWorker, holdReplacements, stopJob, forgetJob, and the replacements
//    the monitor asks for. The callers wait for it (at most kCommandTimeout). Being the only
//    thread that forks, and living as long as the launcher, it is the thread
//    PR_SET_PDEATHSIG ties the workers to (Note [Worker process setup]). It never calls the
//    ExitCallback, so a caller may hold its own locks while calling in.
//  - The monitor thread polls every worker's pidfd (wakes at once on an exit) and, every
//    monitorPeriod (at most 1 s): rotates logs past maxLogBytes, sends stopJob's SIGKILL once
//    the grace has passed. It reaps its children (waitid on the pidfd) and calls the
//    ExitCallback, without holding mu_, once per ended process; then, if the slot's
//    replacement was asked for and is not held back, it asks the spawner to start it. So an
//    exit is always reported before its replacement starts.
//  - killWorker, livePids, openLog, ready and adoptedJobs work under mu_ on the caller's thread.
//  - The ExitCallback may call the launcher's methods; it must not destroy the launcher.
//
// Note [Re-adoption]
// The service leaves tieToParent off, so workers outlive a controller that is killed. A new
// LocalLauncher on the same stateDir (create()) reads every pid file: a process alive with the
// recorded start time is adopted (watched through a pidfd, signalled, reported when it ends,
// never started twice); any other pid file is stale: it is reported as an exit with
// statusKnown=false (from the monitor thread, after create returns) and removed. An adopted
// worker that is not our child has an unknowable exit status (statusKnown=false); one that is
// (a launcher re-created in the same process, or this process is a child subreaper) is reaped
// and reported with its status (so is every child, unless the process ignores SIGCHLD, which
// makes the kernel reap children itself: statusKnown=false then too). Adopted jobs have no JobLaunch yet: the controller calls
// ensureWorkers for each job it still wants (adoptedJobs() lists them), which starts only
// slots that never had a worker; replaceWorker needs that call first. A pid file is removed
// when its process's exit is reported, so after a restart a slot whose exit was already
// reported counts as never started.
//
// Slot rules: ensureWorkers starts each slot that never had a worker (holding does not stop
// that); a slot whose worker ended stays empty until replaceWorker; while replacements are held
// they wait, and releasing starts them. stopJob stops everything and starts nothing more; a
// later ensureWorkers, once every worker ended, starts the job afresh (every slot).
// A start that fails inside the call (ensureWorkers, or replaceWorker on an empty slot) is
// returned as the call's error, and the slot stays as it was; one that fails later (the
// replacement after the old worker's exit, or on release) is reported as a WorkerExit with
// pid 0 and startError, and the slot stays empty until the next replaceWorker.
//
// Thread model: thread-safe (Note [Launcher threads]); mu_ guards the job table.
// The destructor stops both threads and does not kill workers, unless tieToParent (they
// would die with the spawner thread anyway; it then SIGKILLs and reaps them). Do not call it
// while other threads still call in, nor from the ExitCallback. Needs Linux >= 5.4 (pidfd).

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/launch/launcher.h"
#include "controller/launch/pid_file.h"
#include "controller/launch/serial_executor.h"
#include "controller/launch/worker_log.h"

namespace ddp::controller {

inline constexpr Duration kCommandTimeout = std::chrono::seconds(60);  // a call waiting for the spawner
inline constexpr Duration kForgetWait = std::chrono::seconds(2);       // forgetJob waits this long for deaths
inline constexpr size_t kExitReportLines = 20;

struct LocalLauncherOptions {
  std::string stateDir;               // see the layout above; created if missing
  std::string workerBinary;           // absolute path of ddp-worker
  std::vector<std::string> args;      // argv[1..] of every worker
  bool tieToParent = false;           // PR_SET_PDEATHSIG=SIGKILL: workers die with us (ddpctl run)
  int64_t maxLogBytes = int64_t{64} << 20;  // per worker (Note [Log rotation])
  int maxWorkersPerJob = 0;           // 0: 4 x usable cores, at most 256
  Duration grace = std::chrono::seconds(15);  // stopJob's grace when it is given a negative one
  Duration monitorPeriod = std::chrono::milliseconds(200);  // rotation and escalation checks
  Launcher::ExitCallback onExit;      // called on the monitor thread (Note [Launcher threads])

  Status validate() const;
  int effectiveMaxWorkersPerJob() const;
};

class LocalLauncher final : public Launcher {
 public:
  // Validates the options, creates STATE/jobs, adopts live workers (Note [Re-adoption]) and
  // starts the spawner and monitor threads.
  static Result<std::unique_ptr<LocalLauncher>> create(LocalLauncherOptions options);
  ~LocalLauncher() override;
  LocalLauncher(const LocalLauncher&) = delete;
  LocalLauncher& operator=(const LocalLauncher&) = delete;

  std::string name() const override { return "local"; }
  Status ready() const override;
  int maxWorkersPerJob() const override { return maxWorkers_; }
  // This machine's physical memory, shared by the job's workers.
  std::optional<WorkerMemoryBudget> workerMemory(int workers, int ranksPerPod,
                                                 const std::string& kubernetesLimit) const override;
  bool sharesFilesystem() const override { return true; }
  Status ensureWorkers(const JobLaunch& job) override;
  Status adoptJob(const JobLaunch& job) override;
  Status killWorker(const std::string& job, const std::string& workerId, int signal) override;
  Status replaceWorker(const std::string& job, const std::string& workerId) override;
  void holdReplacements(const std::string& job, bool hold) override;
  Result<std::unique_ptr<LogStream>> openLog(const std::string& job, const std::string& workerId,
                                             LogOptions options) override;
  Status stopJob(const std::string& job, Duration grace) override;
  Status forgetJob(const std::string& job) override;
  std::vector<int64_t> livePids(const std::string& job) const override;

  // Jobs with at least one live worker adopted by create() (sorted; fixed after create).
  std::vector<std::string> adoptedJobs() const;

 private:
  struct Proc {
    ProcessIdentity id;
    int pidfd = -1;
    bool adopted = false;
    bool signalled = false;   // reported as killedByLauncher
    int64_t logFloor = 0;     // where its output begins in the slot's log (Note [Log offsets])
  };
  struct Slot {
    std::string workerId;
    std::shared_ptr<WorkerLog> log;
    std::optional<Proc> proc;
    bool everStarted = false;
    bool replaceWanted = false;
    bool starting = false;     // the spawner is starting it (mu_ released meanwhile)
    bool exitPending = false;  // ended, being reported: nothing starts here until reported
  };
  struct Job {
    std::optional<JobLaunch> launch;  // the last ensureWorkers or adoptJob (absent: adopted, not yet told)
    std::map<int, Slot> slots;
    bool hold = false;
    bool stopped = false;
    TimePoint killAt = TimePoint::max();  // stopJob's SIGKILL escalation, sent by the monitor
  };
  struct Planned;  // a slot the spawner is about to start
  struct Report {  // an exit for the monitor to report
    WorkerExit exit;
    std::shared_ptr<WorkerLog> log;  // lastLines come from here, read outside mu_
    int64_t logFloor = 0;
    bool fromReap = false;           // clears the slot's exitPending once reported
  };

  explicit LocalLauncher(LocalLauncherOptions options);

  std::string jobDir(const std::string& job) const;
  std::string logPath(const std::string& job, const std::string& workerId) const;
  std::string pidPath(const std::string& job, const std::string& workerId) const;
  Slot& slotLocked(Job& job, const std::string& jobName, int slot);
  static bool startableLocked(const Job& job, const Slot& slot);
  void signalLocked(Proc& proc, int signal);
  void refreshFinishedLocked();
  void wakeMonitor();

  // Spawner thread (Note [Launcher threads]).
  Status ensureOnSpawner(const JobLaunch& launch);
  Status replaceOnSpawner(const std::string& job, const std::string& workerId);
  Status stopOnSpawner(const std::string& job, Duration grace);
  Status forgetOnSpawner(const std::string& job);
  // Starts every startable slot of `job`. reportFailures: a failed start is reported as an
  // exit (asynchronous replacements) instead of only being returned.
  Status startSlots(const std::string& job, bool reportFailures);
  Status startOne(const std::string& job, int slot, const Planned& plan, bool reportFailures);

  // Monitor thread (local_launcher_monitor.cc).
  void adoptFromStateDir();
  void monitorLoop();
  void reapExited(const std::set<int>& readyPidfds);
  void escalateStops();
  void rotateLogs();
  void deliverReports();

  const LocalLauncherOptions options_;
  const int maxWorkers_;
  mutable std::mutex mu_;
  std::map<std::string, Job> jobs_;            // guarded by mu_
  std::vector<Proc> graveyard_;                // guarded by mu_: forgotten jobs' processes
  std::vector<Report> pendingReports_;         // guarded by mu_: exits the monitor reports
  std::vector<std::string> adopted_;           // written by create() only
  int wakeFd_ = -1;                            // eventfd: wakes the monitor
  std::atomic<bool> stopping_{false};
  TimePoint lastRotation_{};                   // monitor thread only
  std::unique_ptr<SerialExecutor> spawner_;
  std::thread monitor_;
};

}  // namespace ddp::controller
