#pragma once
// Launcher: the controller's seam to whatever runs worker processes (this host: LocalLauncher;
// later a cluster launcher). The controller decides *what* should run; a launcher starts,
// signals, replaces and forgets processes, keeps their logs, and reports each exit once.
//
// Worker identity: a job has slots 0..workers-1; the worker in slot N is "<job>-w<N>"
// (workerIdFor). A slot keeps its id across replacements, and its log continues. With several
// ranks per pod (JobLaunch::perPod P, Note [Several ranks per pod] in
// worker/control/pod_supervisor.h) pod p runs slots p*P .. p*P+P-1, local rank l in slot p*P+l:
// the id names the pod slot and the local rank through that one number (workerIdsOfPod).
//
// Thread model: implementations are thread-safe (every method may be called from any thread)
// and say on which thread the ExitCallback runs. LogStream objects are used by one thread at a
// time and may outlive the launcher that opened them (they then end once everything is read).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/launch/worker_env.h"
#include "common/status.h"

namespace ddp {
struct JobSpec;
}  // namespace ddp

namespace ddp::controller {

// What a job needs from a launcher.
struct JobLaunch {
  std::string jobName;                 // [A-Za-z0-9._-], 1..63 chars, not starting with '.'
  int workers = 0;                     // slots 0..workers-1; worker ids "<job>-w<slot>"
  launch::WorkerEnv env;               // controller URL, token, log format, ...; the launcher
                                       // sets workerId per slot and jobName to the above
  std::vector<std::string> extraEnv;   // more NAME=value entries (override the above)
  // spec.worker.command: [program, args...] run instead of the launcher's worker program, with
  // the same environment (Note [Worker commands]); empty: the launcher's own (ddp-worker).
  std::vector<std::string> command;
  // spec.workers.perPod: ranks per pod for a launcher that runs pods (the Kubernetes launcher);
  // the local launcher runs one process per slot whatever it says.
  int perPod = 1;
};

// What the controller's configuration adds to every job's launch (JobManagerOptions).
struct WorkerLaunchSettings {
  std::string controllerUrl;       // DDP_CONTROLLER_URL
  std::string logFormat;           // DDP_LOG_FORMAT ("" = the job's)
  std::string checkpointDir;       // DDP_CHECKPOINT_DIR ("" = the job's)
  std::string commThreadPriority;  // DDP_COMM_THREAD_PRIORITY ("" = the job's)
};

// The launch of job `name` with `spec` and worker token `token`: the one place a JobLaunch is
// made from a job (the JobManager's launches, and ddpctl render's).
JobLaunch makeJobLaunch(const std::string& name, const JobSpec& spec, const std::string& token,
                        const WorkerLaunchSettings& settings);

// Reported once per worker process that ended.
struct WorkerExit {
  std::string jobName, workerId;
  int slot = -1;
  int64_t pid = 0;                     // 0: the process could not be started (see startError)
  bool signaled = false;
  int code = 0;                        // exit status, or the signal number when signaled
  bool statusKnown = true;             // false for a re-adopted worker that is not our child
  bool killedByLauncher = false;       // the launcher signalled it (kill/replace/stop/forget)
  std::string startError;              // non-empty: a replacement failed to start (pid 0)
  std::vector<std::string> lastLines;  // the last lines (up to 20) this process wrote to its log
  bool ok() const { return statusKnown && startError.empty() && !signaled && code == 0; }
  // "worker fmnist-w1 (pid 123) exited with status 3" / "... killed by signal 9 (Killed)".
  std::string describe() const;
};

struct LogOptions {
  int64_t tailLines = -1;  // start this many lines before the end (per worker); -1: everything
  bool follow = false;     // keep returning new lines (see LogStream::read)
};

// One worker's log, or every worker's merged.
class LogStream {
 public:
  virtual ~LogStream() = default;
  // The next chunk of text, whole lines only (a final line without '\n' is completed with one
  // once its writer is gone). Following: empty + ok when nothing new arrived before `deadline`.
  // At the end (not following: everything there was at the time of the read; following: the
  // slot's workers ended and the job was stopped or forgotten): OutOfRange. Blocks at most
  // until `deadline`.
  virtual Result<std::string> read(Deadline deadline) = 0;
  virtual bool done() const = 0;  // the end was reached (read returns OutOfRange from now on)
};

// The memory one worker of a job may use (Note [Memory estimate] in controller/jobs), and what
// says so: "this machine's 31.2 GiB shared by 4 workers", or the pod limit's field.
struct WorkerMemoryBudget {
  int64_t bytes = 0;
  std::string source;
  std::string field;  // the spec field a refusal names ("" : spec.model)
};

class Launcher {
 public:
  using ExitCallback = std::function<void(const WorkerExit&)>;
  virtual ~Launcher() = default;

  virtual std::string name() const = 0;    // "local"
  virtual Status ready() const = 0;        // for /readyz
  virtual int maxWorkersPerJob() const = 0;  // the validator refuses workers.count above this
  // The memory each of `workers` workers started with `kubernetesLimit` (the spec's
  // resources.limits.memory, "" when none) may use, where a pod runs `ranksPerPod` of them
  // (spec.workers.perPod) under that one limit; nullopt when unknown (nothing is checked).
  virtual std::optional<WorkerMemoryBudget> workerMemory(int workers, int ranksPerPod,
                                                         const std::string& kubernetesLimit) const {
    (void)workers;
    (void)ranksPerPod;
    (void)kubernetesLimit;
    return std::nullopt;
  }

  // Whether the workers see the controller's filesystem (a local launcher): then the controller
  // checks the job's data files at submission (Note [Data checks at submission]).
  virtual bool sharesFilesystem() const { return false; }

  // Every slot 0..workers-1 has a live worker: starts each slot that never had one. Idempotent.
  // A slot whose worker exited is NOT refilled by this call: the controller asks for that with
  // replaceWorker once it has seen the exit.
  virtual Status ensureWorkers(const JobLaunch& job) = 0;
  // A restarted controller's job that is past its rendezvous (Note [Controller state and
  // persistence]): records how the job's workers are started, for later replaceWorker calls,
  // and starts nothing; a slot without a live worker counts as one that had a worker.
  virtual Status adoptJob(const JobLaunch& job) = 0;
  // Sends `signal` to a live worker. NotFound when no such live worker.
  virtual Status killWorker(const std::string& job, const std::string& workerId, int signal) = 0;
  // SIGKILLs the worker if alive, then starts a fresh process in its slot once the old one's
  // exit was reported (unless replacements are held back: then the slot waits until released).
  virtual Status replaceWorker(const std::string& job, const std::string& workerId) = 0;
  // While held, no replacement starts; releasing starts the waiting ones.
  virtual void holdReplacements(const std::string& job, bool hold) = 0;
  // `workerId` "" = every worker of the job, merged, each line prefixed "[wN] ".
  virtual Result<std::unique_ptr<LogStream>> openLog(const std::string& job, const std::string& workerId,
                                                     LogOptions options) = 0;
  // SIGTERM every worker, SIGKILL those alive after `grace`; returns at once.
  virtual Status stopJob(const std::string& job, Duration grace) = 0;
  // After a job's deletion: kills what is left, removes its pid files and logs.
  virtual Status forgetJob(const std::string& job) = 0;
  virtual std::vector<int64_t> livePids(const std::string& job) const = 0;
};

// "<job>-w<slot>".
std::string workerIdFor(const std::string& job, int slot);
// The slot of "<job>-w<slot>", or nullopt when `workerId` is not a worker id of `job`.
std::optional<int> slotOfWorkerId(const std::string& job, const std::string& workerId);
// The ids of the ranks of pod `podSlot` with `perPod` ranks per pod, in local rank order:
// workerIdFor(job, podSlot * perPod + l) for l in 0..perPod-1.
std::vector<std::string> workerIdsOfPod(const std::string& job, int podSlot, int perPod);
// The pod slot of `workerId` (slot / perPod), or nullopt when it is not a worker id of `job`.
std::optional<int> podOfWorkerId(const std::string& job, const std::string& workerId, int perPod);
// `ids` and every other rank of their pods, each once, in order: a pod is replaced as one.
std::vector<std::string> withPodSiblings(const std::string& job, const std::vector<std::string>& ids, int perPod);
// Job names become path components: [A-Za-z0-9._-], 1..63 chars, not starting with '.'.
Status validateJobName(const std::string& job);

}  // namespace ddp::controller
