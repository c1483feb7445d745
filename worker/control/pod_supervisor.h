#pragma once
// The supervisor of a pod of several ranks: ddp-worker (or a trainer built on run_worker.h) with
// DDP_POD_WORKER_IDS set starts one copy of itself per id and watches them.
//
// Note [Several ranks per pod]
// With spec.workers.perPod N the Kubernetes launcher runs a job's ranks N to a pod (one pod per
// node, N GPUs: NCCL then uses NVLink, P2P and shared memory between them). The pod's one
// container runs the worker program with DDP_POD_WORKER_IDS=<id0>,...,<idN-1> (the controller's
// worker ids of the pod's ranks: workerIdsOfPod in controller/launch/launcher.h); it becomes this
// supervisor, which starts the same program (/proc/self/exe, the same arguments) N times, rank
// l with DDP_WORKER_ID=<idl> and DDP_LOCAL_RANK=l (its GPU is cuda:l), without
// DDP_POD_WORKER_IDS. Each rank registers with the controller on its own; the rendezvous keeps a
// pod's ranks adjacent in rank order (Note [Rendezvous rounds]).
// The pod is the unit of replacement: when one rank ends with a failure (a non-zero status or
// a signal) the supervisor ends its siblings by PID and exits non-zero, so the pod ends Failed
// and the controller replaces all of its ranks at once. The siblings get SIGKILL at once: a
// worker takes SIGTERM as a stop request (stop_signal.h), and one whose generation just broke
// (its peer is gone) then reports a failure of its own in its final heartbeat, which the
// controller takes as a failure no restart fixes, failing the job instead of replacing the pod
// (KubernetesE2ePerPodTest failed the job that way); a SIGKILLed sibling leaves the decision to
// its exit.
// When every rank exits 0 the supervisor exits 0. SIGTERM or SIGINT to the supervisor (the
// kubelet deleting the pod) is passed to every rank, which stops as a worker does on SIGTERM;
// those still running after `stopGrace` are killed. Each rank dies with the supervisor
// (PR_SET_PDEATHSIG), so no rank outlives its pod's main process.
// Thread model: superviseRanks runs on the calling (main) thread, before any other thread
// starts: it forks. It blocks SIGTERM, SIGINT and SIGCHLD and takes them with sigtimedwait;
// every wait is bounded by the graces.

#include <string>
#include <vector>

#include "common/clock.h"

namespace ddp::runtime {

// How long the ranks get after the supervisor was asked to stop (within Kubernetes' default
// terminationGracePeriodSeconds of 30).
inline constexpr Duration kPodStopGrace = std::chrono::seconds(25);

struct PodSupervisorOptions {
  std::string program;                 // the executable every rank runs ("/proc/self/exe")
  std::vector<std::string> args;       // argv, argv[0] included
  std::vector<std::string> environment;  // NAME=value: the supervisor's own
  std::vector<std::string> workerIds;    // one rank per id, local rank = index
  Duration stopGrace = kPodStopGrace;
};

// The environment of local rank `localRank`: `base` without DDP_POD_WORKER_IDS, DDP_WORKER_ID and
// DDP_LOCAL_RANK, then DDP_WORKER_ID=<ids[localRank]> and DDP_LOCAL_RANK=<localRank>. Pure.
std::vector<std::string> rankEnvironment(const std::vector<std::string>& base, const std::vector<std::string>& ids,
                                         int localRank);

// How a rank ended, as the supervisor reports it: 0, its exit status, or 128 + its signal.
int rankExitCode(int waitStatus);

// Starts the ranks and supervises them (Note [Several ranks per pod]). Returns the status the
// supervisor exits with: 0 when every rank exited 0, else the first failed rank's rankExitCode
// (1 when that is 0, e.g. a rank that could not be started).
int superviseRanks(const PodSupervisorOptions& options);

}  // namespace ddp::runtime
