#pragma once
// Gang scheduling (spec.kubernetes.runPolicy.schedulingPolicy): whether every worker pod of a
// job got to run within the schedule timeout. Pure: the reconciler lists the pods and carries the
// verdict out (ddpjob_reconciler.cc).
//
// Note [Schedule timeout]
// A job's workers train together: one pod that no node can take (no free nvidia.com/gpu, an
// untolerated taint, a nodeSelector nobody matches) holds every other worker in the rendezvous.
// A pod counts as having been scheduled once it reached phase Running (or ended: Succeeded,
// Failed); a pod being deleted is not looked at. A pod still Pending (or without a phase) for
// scheduleTimeoutSeconds times the gang out. Its wait is measured from when the reconciler first
// saw the pod (PodSchedule::sinceMs), not from metadata.creationTimestamp: the API server's
// clock may differ from the controller's, and a new leader gives the pods it finds a fresh
// timeout rather than failing them at once. Replaced pods (new uids) start a new wait, so after
// a Retry the timeout starts over. The verdict names each waiting pod and why it waits: the
// PodScheduled=False condition's reason and message (the scheduler's "0/3 nodes are available:
// 3 Insufficient nvidia.com/gpu"), or for a scheduled pod its container's waiting reason
// (ContainerCreating, ImagePullBackOff).
// A pod held by a scheduling gate (spec.schedulingGates: Kueue's kueue.x-k8s.io/admission until
// its workload is admitted, Note [Kueue pod groups] in scheduling_objects.h) is Pending but not
// yet the scheduler's: it never times the gang out, and its wait starts when the gate is gone
// (the reconciler gives a gated pod sinceMs = now at each look). A gang with a gated pod is
// kWaiting at most; its gated pods are listed apart and never replaced by a Retry.
// Thread model: pure functions.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::controller::kube {

// What the schedule timeout needs to know about one worker pod.
struct PodSchedule {
  std::string name, uid;
  int slot = -1;             // its ddp.dev/slot label (-1: none)
  std::string phase;         // status.phase ("" when the API server has not set one yet)
  bool terminating = false;  // metadata.deletionTimestamp is set
  bool gated = false;        // spec.schedulingGates holds a gate (Kueue's admission)
  std::string reason;        // why it is not running yet ("" when unknown)
  std::string message;
  int64_t sinceMs = 0;       // when its wait started (the caller sets it: Note [Schedule timeout])
};

// The fields of a pod object (sinceMs left 0).
PodSchedule podScheduleOf(const nlohmann::json& pod);

enum class GangState { kOk, kWaiting, kTimedOut };

struct GangVerdict {
  GangState state = GangState::kOk;
  std::vector<PodSchedule> notRunning;  // the pods not scheduled yet, gated ones apart (kWaiting, kTimedOut)
  std::vector<PodSchedule> gated;       // the pods a scheduling gate holds (kWaiting)
  std::string message;                  // kTimedOut: names every waiting pod and why
};

// kOk when every pod (there is at least one) has been scheduled; kTimedOut when a pod waited
// `timeoutMs` or longer at `nowMs`; kWaiting otherwise (no pods at all: kWaiting).
GangVerdict decideGang(const std::vector<PodSchedule>& pods, int64_t nowMs, int64_t timeoutMs);

}  // namespace ddp::controller::kube
