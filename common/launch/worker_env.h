#pragma once
// The environment contract between a launcher and the worker it starts: every launcher (the
// local launcher, the Kubernetes launcher, benchmarks) builds a worker's environment with
// workerEnvironment(), and the worker reads it only through WorkerConfig
// (worker/control/worker_config.h), which uses these names. Rank, world size and generation are
// not here: the worker gets them from the controller's rendezvous.
// Thread model: plain values and pure functions.

#include <string>
#include <vector>

namespace ddp::launch {

inline constexpr const char* kEnvControllerUrl = "DDP_CONTROLLER_URL";   // http://host:port
inline constexpr const char* kEnvJobName = "DDP_JOB_NAME";
inline constexpr const char* kEnvJobToken = "DDP_JOB_TOKEN";             // the job's worker token
inline constexpr const char* kEnvWorkerId = "DDP_WORKER_ID";             // stable per slot: "<job>-w<N>"
inline constexpr const char* kEnvAdvertiseAddr = "DDP_ADVERTISE_ADDR";   // host peers reach this worker on
inline constexpr const char* kEnvLogFormat = "DDP_LOG_FORMAT";           // human | json
inline constexpr const char* kEnvLogLevel = "DDP_LOG_LEVEL";             // debug | info | warning | error
inline constexpr const char* kEnvCheckpointDir = "DDP_CHECKPOINT_DIR";   // overrides spec.checkpoint.dir
inline constexpr const char* kEnvCommThreadPriority = "DDP_COMM_THREAD_PRIORITY";  // auto | realtime | normal
inline constexpr const char* kEnvSameHostMemory = "DDP_SAME_HOST_MEMORY";            // on | off
// A pod of several ranks (Note [Several ranks per pod] in worker/control/pod_supervisor.h): the
// worker ids of its ranks, comma-separated, in local rank order; set instead of DDP_WORKER_ID.
inline constexpr const char* kEnvPodWorkerIds = "DDP_POD_WORKER_IDS";
// Set by the pod's supervisor for each rank it starts: the rank's index in the pod (its GPU).
inline constexpr const char* kEnvLocalRank = "DDP_LOCAL_RANK";

struct WorkerEnv {
  std::string controllerUrl;
  std::string jobName;
  std::string jobToken;
  std::string workerId;
  std::string advertiseAddress = "127.0.0.1";
  std::string logFormat;          // empty: not set
  std::string logLevel;           // empty: not set
  std::string checkpointDir;      // empty: not set
  std::string commThreadPriority; // empty: not set (the job's spec.commThreadPriority rules)
  std::vector<std::string> podWorkerIds;  // empty: not set (one rank per process)
};

// "NAME=value" entries for every non-empty field, in a fixed order.
std::vector<std::string> workerEnvironment(const WorkerEnv& env);

}  // namespace ddp::launch
