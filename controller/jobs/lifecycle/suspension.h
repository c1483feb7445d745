#pragma once
// What a wanted spec.suspend asks of a job (pure): suspend it, resume it, or nothing yet.
//
// Note [Suspended jobs]
// spec.suspend, as Kubernetes' Job and Kubeflow's JobSet have it: a suspended job has no worker.
//  - Submitted with suspend: true, the job is stored Suspended (condition Suspended True, reason
//    JobSuspended) and the launcher is asked for nothing.
//  - Suspending a Pending, Running or Restarting job stops it as a cancel does (heartbeat
//    `stop`, SIGTERM, then the stop grace; Note [Stopping an unresponsive worker]): each worker
//    takes `stop` as "checkpoint and stop", so a job with spec.checkpoint.dir commits a
//    checkpoint at the step its ranks agree on (the two-phase commit of Note [Two-phase
//    checkpoint commit]) before they exit. Once no worker process is left the job is Suspended
//    (decideJob), not Cancelled: not terminal, its record, events and checkpoints kept.
//  - Resuming a Suspended job gives it a fresh live state (its generation numbering goes on, so
//    a worker of before is fenced), phase Pending with condition Suspended False (JobResumed),
//    and asks the launcher for its workers anew (the launcher forgets the old ones first); they
//    load the last committed checkpoint as after any restart, so training continues on the same
//    trajectory from that step (docs/RECOVERY.md). Without spec.checkpoint.dir it starts over.
//  - A resume while the workers are still stopping waits (kNone: the reconciler asks again at
//    its next tick; the REST route answers 409); suspending or resuming a finished job does
//    nothing (409 through the REST route).
// The wanted state lives in the stored spec (spec.suspend), so a restarted controller keeps a
// Suspended job suspended. restarts, activeDeadlineSeconds' clock and the job's uid carry over.
// Thread model: pure function.

#include "controller/store/job_record.h"

namespace ddp::controller {

enum class SuspendAction { kNone, kSuspend, kResume };

// `suspending`: a suspension was asked and the job is not Suspended yet (its workers stopping).
SuspendAction decideSuspension(JobPhase phase, bool suspending, bool wantSuspended);

}  // namespace ddp::controller
