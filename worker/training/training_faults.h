#pragma once
// TrainingFaults: the faults a test injects into one rank's training, in one object. The step
// loop and the checkpoint writer ask it at their hook points; nothing else in the trainer knows
// about fault injection. Built by the tests' setters, or by trainingFaultsFromEnv (ddp-worker:
// the DDP_TEST_* variables, Note [Injected faults]), and handed to the trainer once through
// TrainerIo::faults (nullptr: no faults).
// Thread model: the setters before the trainer is created; afterwards the object is immutable and
// its queries are safe from any thread (the training thread and the checkpoint writer's).

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "worker/control/worker_config.h"

namespace ddp::runtime {

// Note [Injected faults]
// ddp-worker reads every fault-injection variable in one place (trainingFaultsFromEnv), once per
// generation, and applies each only in the job's first generation and only on the rank it names
// (a replacement worker, or the same worker after a recovery, runs clean):
//   DDP_TEST_STALL=RANK:STEP:SECONDS        before step STEP (1-based) the training thread stalls
//                                           SECONDS (or until a stop) while its heartbeats go
//                                           on: a rank that never reaches its peers' next
//                                           collective (the controller's CollectiveStuck)
//   DDP_TEST_CHECKPOINT_FAULT=RANK:STEP:fail           the rank's shard write of STEP fails
//   DDP_TEST_CHECKPOINT_FAULT=RANK:STEP:delay:SECONDS  ... starts SECONDS late (training goes on
//                                                      meanwhile: Note [Asynchronous checkpoints])
// The fields are read as scanf's %d, %lld and %lf read them (leading blanks and trailing text
// after the last field are accepted). A malformed value is an InvalidArgument naming the
// variable; ddp-worker logs it and runs without injected faults.

// What the checkpoint writer does to one shard write.
struct ShardWriteFault {
  bool fail = false;          // the write is not done and reports an injected failure
  double delaySeconds = 0;    // the write starts this late (0: on time)
};

class TrainingFaults {
 public:
  // --- setters (before the trainer is created); a step is 1-based: step N is the N-th step ---
  // Act as if a stop was requested during step `step` and every later step, so the run
  // checkpoints and stops at the first command-word step at or after it (Note [Trainer step]).
  TrainingFaults& stopDuring(int64_t step);
  // Before step `step` the training thread sleeps `seconds` (or until a stop).
  TrainingFaults& stallBefore(int64_t step, double seconds);
  // This rank's shard write of the checkpoint at step `step` fails.
  TrainingFaults& failShardWrite(int64_t step);
  // This rank's shard write of the checkpoint at step `step` starts `seconds` late.
  TrainingFaults& delayShardWrite(int64_t step, double seconds);

  // --- hooks ---
  // Training thread: whether this rank asks for a stop in the command word of step `step`.
  bool stopRequestedDuring(int64_t step) const;
  // Training thread, before step `step` runs: how long to stall (nullopt: no stall). Each step
  // number is run once, so a stall happens at most once per run.
  std::optional<double> stallBeforeStep(int64_t step) const;
  // Checkpoint writer thread: what to do to this rank's shard write of step `step`.
  ShardWriteFault shardWrite(int64_t step) const;
  // No fault set.
  bool none() const;

 private:
  int64_t stopStep_ = -1;
  int64_t stallStep_ = -1;
  double stallSeconds_ = 0;
  int64_t failStep_ = -1;
  int64_t delayStep_ = -1;
  double delaySeconds_ = 0;
};

// Note [Injected faults]: this rank's faults in `generation` from every DDP_TEST_* variable of
// `env`. InvalidArgument naming the variable when one is malformed (whatever the rank and
// generation: a typo is reported in every run).
Result<TrainingFaults> trainingFaultsFromEnv(const EnvLookup& env, int rank, int64_t generation);

}  // namespace ddp::runtime
