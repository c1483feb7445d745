#pragma once
// ControllerConfig: every setting of ddp-controller, with defaults inline and validate().
// Read in one place (parseControllerConfig) from flags, falling back to DDP_CONTROLLER_*
// environment variables:
//   --listen HOST:PORT       DDP_CONTROLLER_LISTEN      (127.0.0.1:8080; port 0: any free port)
//   --state-dir DIR          DDP_CONTROLLER_STATE_DIR   (required: jobs.db, token, worker logs)
//   --token-file FILE        DDP_CONTROLLER_TOKEN_FILE  (default: STATE_DIR/token, generated)
//   --token-secret NAME      DDP_CONTROLLER_TOKEN_SECRET (kubernetes, instead of --token-file: the
//                            token in Secret NAME of the controller's namespace, created when
//                            absent: Note [Token Secret] in controller/kubernetes/token_secret.h)
//   --worker-bin PATH        DDP_CONTROLLER_WORKER_BIN  (default: ddp-worker next to this program)
//   --allow-worker-command PATH:PATH DDP_CONTROLLER_ALLOW_WORKER_COMMAND (local launcher: the
//                            programs, or folders of programs, a job's spec.worker.command may
//                            run; default none: Note [Worker commands])
//   --advertise-url URL      DDP_CONTROLLER_ADVERTISE_URL (what workers dial; default http://LISTEN)
//   --max-job-bytes N        DDP_CONTROLLER_MAX_JOB_BYTES (1 MiB)
//   --handler-threads N      DDP_CONTROLLER_HANDLER_THREADS (4)
//   --log-level L            DDP_CONTROLLER_LOG_LEVEL   (info)
//   --launcher local|external DDP_CONTROLLER_LAUNCHER   (local: workers are processes on this
//                            host; external: something else starts them, e.g. simulated
//                            workers of bench_controller; kubernetes: DDPJob resources and
//                            worker pods, docs/KUBERNETES.md)
//   --worker-image IMAGE     DDP_CONTROLLER_WORKER_IMAGE (kubernetes: the default worker image)
//   --watch-namespace NS[,NS] DDP_CONTROLLER_WATCH_NAMESPACE (kubernetes: the namespaces whose
//                            DDPJobs it serves, their worker objects in the DDPJob's namespace;
//                            the first also takes the REST API's jobs; default: the controller's
//                            own namespace)
//   --watch-all-namespaces   DDP_CONTROLLER_WATCH_ALL_NAMESPACES (kubernetes: the DDPJobs of every
//                            namespace, a cluster-wide watch; --watch-namespace's first still
//                            takes the REST API's jobs)
//   --leader-election-lease NAME DDP_CONTROLLER_LEADER_ELECTION_LEASE (kubernetes: elect a
//                            leader on this Lease; "": a single replica; a leader that loses
//                            it exits with status 3, see ddp-controller's main)
//   --kube-server URL        DDP_CONTROLLER_KUBE_SERVER (kubernetes, development and tests: this
//                            API server instead of the in-cluster configuration)
//   --gang-scheduler-name S  DDP_CONTROLLER_GANG_SCHEDULER_NAME (kubernetes: the worker pods'
//                            schedulerName; volcano or scheduler-plugins-scheduler also get a
//                            PodGroup per job: Note [Gang scheduler PodGroups]; "": the default)
//   POD_NAME (environment)   this replica's identity in leader election
//   --metrics-open           DDP_CONTROLLER_METRICS_OPEN (GET /metrics without the API token;
//                            off: /metrics needs it like every /v1 route)
//   --metrics-retention S    DDP_CONTROLLER_METRICS_RETENTION (900: seconds a finished job's
//                            series stay in /metrics)
// Thread model: plain value and pure functions.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "controller/jobs/job_timings.h"

namespace ddp::controller {

struct ControllerConfig {
  std::string listenHost = "127.0.0.1";
  int listenPort = 8080;
  std::string stateDir;
  std::string tokenFile;          // empty: STATE_DIR/token
  std::string tokenSecret;        // kubernetes: the token's Secret instead (Note [Token Secret])
  std::string workerBinary;       // empty: ddp-worker next to the running program
  // The workers' listener (Note [Two listeners] in listeners.cc): empty host = listenHost; port
  // 0 = the one recorded in the state dir by an earlier start, else one the OS picks.
  std::string workerListenHost;
  int workerListenPort = 0;
  std::string advertiseUrl;       // the workers' controller URL; empty: http://workerHost:boundWorkerPort
  size_t maxConnectionsPerClient = 1024;  // public listener only; 0: no cap
  Duration requestTimeout = std::chrono::seconds(10);  // a request must arrive within this (408)
  // Where jobs may point their workers (Note [Allowed path roots]); empty: STATE_DIR/checkpoints
  // and tmpDir.
  std::vector<std::string> allowedPathRoots;
  // The local launcher's allowed spec.worker.command programs or folders (Note [Worker
  // commands]); empty: none. Other launchers run no job program on this host: any is allowed.
  std::vector<std::string> allowedWorkerCommands;
  // Embedded use (ddpctl run): any spec.worker.command (the user's own code on their machine).
  bool allowAnyWorkerCommand = false;
  std::string tmpDir = "/tmp";  // the system's temporary folder ($TMPDIR)
  size_t maxJobBytes = 1u << 20;
  int handlerThreads = 4;
  log::Level logLevel = log::Level::kInfo;
  std::string launcher = "local";  // local | external | kubernetes
  std::string workerImage;          // kubernetes: default worker image
  std::string watchNamespace;       // kubernetes: watchNamespaces' first ("" = the controller's namespace)
  std::vector<std::string> watchNamespaces;  // kubernetes: --watch-namespace, every one
  bool watchAllNamespaces = false;  // kubernetes: a cluster-wide DDPJob watch
  std::string leaderElectionLease;  // kubernetes: "" = no leader election
  std::string kubeServer;           // kubernetes: "" = in-cluster configuration
  std::string gangSchedulerName;    // kubernetes: the pods' schedulerName ("" = the default)
  std::string podName;              // kubernetes: leader-election identity (POD_NAME)
  Duration persistEvery = std::chrono::seconds(2);
  // Embedded use (ddpctl run): workers die with this process (PR_SET_PDEATHSIG).
  bool tieWorkersToProcess = false;
  // Cancel: workers are asked to checkpoint and stop; those still running after this get
  // SIGTERM, then SIGKILL.
  Duration stopGrace = std::chrono::seconds(30);
  // The controller's other graces and scan periods (controller/jobs/job_timings.h); defaults
  // only, no flag: embedded controllers (tests, benches, ddpctl run) set them here.
  JobTimings jobTimings;
  // Passed to every worker (empty: the job's own choice).
  std::string workerLogFormat;
  std::string workerCheckpointDir;
  std::string commThreadPriority;
  // GET /metrics (docs/METRICS.md): open to anyone who can reach the port, or token-protected.
  bool metricsOpen = false;
  Duration metricsRetention = std::chrono::minutes(15);

  Status validate() const;
};

using ConfigEnv = std::function<std::optional<std::string>(const std::string&)>;
ConfigEnv processConfigEnv();

// argv without the program name. "--help" yields NotFound carrying the usage text.
Result<ControllerConfig> parseControllerConfig(const std::vector<std::string>& args, const ConfigEnv& env);
std::string controllerUsage();

// The directory of the running program ("/proc/self/exe").
std::string programDir();

}  // namespace ddp::controller
