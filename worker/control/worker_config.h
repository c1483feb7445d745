#pragma once
// WorkerConfig: how one ddp-worker process is told who it is and where its controller is. Read
// from the launcher's environment contract (common/launch/worker_env.h), with flags as
// overrides; this is the only place the worker reads its environment (but for the test-only
// DDP_TEST_* fault variables, which training_faults.h reads through processEnv()):
//   --controller URL              DDP_CONTROLLER_URL        http://host:port of ddp-controller
//   --job NAME                    DDP_JOB_NAME              the job this worker belongs to
//   --token-file FILE             DDP_JOB_TOKEN             the job's worker token (the flag names
//                                                           a file holding it; the variable is
//                                                           the token itself)
//   --worker-id ID                DDP_WORKER_ID             stable per slot ("<job>-w<N>")
//   --advertise-address HOST      DDP_ADVERTISE_ADDR        host peers reach this worker on
//                                                           (default 127.0.0.1)
//   --log-format F                DDP_LOG_FORMAT            human | json (default: the job's)
//   --log-level L                 DDP_LOG_LEVEL             debug | info (default) | warning | error
//   --checkpoint-dir DIR          DDP_CHECKPOINT_DIR        overrides spec.checkpoint.dir
//   --comm-thread-priority P      DDP_COMM_THREAD_PRIORITY  auto | realtime | normal (default:
//                                                           the job's spec.commThreadPriority)
//   --same-host-memory on|off     DDP_SAME_HOST_MEMORY      off: allreduces never read peers'
//                                                           memory (Note [Same-host allreduce])
//   --pod-worker-ids ID,ID,...    DDP_POD_WORKER_IDS        supervise one rank per id instead
//                                                           (pod_supervisor.h; no --worker-id)
//   --local-rank N                DDP_LOCAL_RANK            the rank's index in its pod: its GPU
//                                                           is cuda:N (set by the supervisor)
// Rank, world size, generation and the job spec come from the controller (controller_client.h).
// Thread model: plain value and pure functions (the token file is read while parsing).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "common/thread_priority.h"

namespace ddp::runtime {

enum class LogFormat { kHuman, kJson };
bool parseLogFormat(const std::string& text, LogFormat* out);

inline constexpr const char* kDefaultAdvertiseAddress = "127.0.0.1";

struct WorkerConfig {
  std::string controllerUrl;  // "http://host:port" (a trailing '/' is dropped)
  std::string jobName;
  std::string jobToken;
  std::string workerId;
  std::string advertiseAddress = kDefaultAdvertiseAddress;
  std::optional<LogFormat> logFormat;  // unset: the job's spec.logFormat
  log::Level logLevel = log::Level::kInfo;
  std::string checkpointDirOverride;   // empty: the job's own
  std::optional<CommThreadPriority> commThreadPriority;  // unset: the job's spec.commThreadPriority
  bool sameHostMemory = true;  // GlooOptions::sameHostMemory
  std::vector<std::string> podWorkerIds;  // non-empty: this process supervises these ranks
  std::optional<int> localRank;           // set: this rank's GPU index in its pod

  // InvalidArgument naming the flag and variable and the reason.
  Status validate() const;
};

// Environment lookup, injectable for tests (nullopt: unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnv();
// This process's whole environment as NAME=value entries (what a pod's supervisor hands on to
// its ranks: pod_supervisor.h).
std::vector<std::string> processEnvironment();

// Parses argv (argv[0] is skipped) with `env` as fallback. "--help" yields NotFound with the
// usage text as message (the caller prints it and exits 0).
Result<WorkerConfig> parseWorkerConfig(const std::vector<std::string>& args, const EnvLookup& env);
std::string workerUsage();

// "host:port" -> parts; InvalidArgument naming `what` otherwise ("[::1]:80" gives "::1").
Status parseHostPort(const std::string& text, const std::string& what, std::string* host, int* port);
// "http://host:port[/]" -> parts; InvalidArgument naming `what` otherwise (no path, no https).
Status parseControllerUrl(const std::string& url, const std::string& what, std::string* host, int* port);

}  // namespace ddp::runtime
