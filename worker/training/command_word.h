#pragma once
// The command word: what every rank must do at the same step, agreed on by an allreduce(MAX) of
// each rank's word (Note [Trainer step] in trainer.h). Two flags: stop (SIGTERM, the
// controller's `stop`, an injected stop) and checkpoint now (the controller's `checkpoint`).
// The decisions are pure; CommandWordAgreement carries out the collective.
//
// Note [Command word placement]
// The trainer issues the word once the step's gradients are reduced, before the optimizer step,
// and waits for it after the step (Note [Trainer step]). Issued as the step started, its
// exchange overlapped the forward pass of ranks that had not reached it yet: the first rank to
// arrive waited (through the shared page, Note [Small ops through the page], spinning first
// when the ranks fit the cores), and on two workers sharing two cores its executor was
// scheduled onto the core of the peer still computing, which it then held for up to the spin.
// Right after the gradients' allreduce the ranks have just left the same collective, so the
// exchange finds every peer there and completes in microseconds, overlapped with the
// optimizer step. A stop asked for during the step's forward and backward is now seen at this
// step instead of the next.
// Thread model: the training thread only.

#include <cstdint>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"

namespace ddp::runtime {

struct CommandWord {
  bool stop = false;
  bool checkpointNow = false;
};

// What the step loop does with the agreed word: a stop checkpoints (unless this step already
// has one) and ends the run; a checkpoint request alone checkpoints and is cleared.
enum class CommandAction { kNone, kCheckpoint, kStop };
CommandAction commandAction(const CommandWord& agreed);

// Whether the ranks agree on a command word during step `step` (1-based): every
// `everySteps`-th step; never with Join, whose ranks reach a step at different times (a joined
// rank could not match the collective; they agree on a stop at the epoch's end instead).
bool commandWordDue(int64_t step, int everySteps, bool join);

// The collectives of the agreement. Its buffers are members: an issued allreduce may write them
// until its Work completes, so the agreement must outlive the backend's use of them (the
// trainer's lifetime, Note [Worker generations] in worker_entry.cc).
class CommandWordAgreement {
 public:
  // Issues the allreduce(MAX) of `mine` (asynchronous: it overlaps the step). Precondition:
  // nothing issued is still to be awaited.
  void issue(comm::Backend& backend, const CommandWord& mine);
  // Waits for the issued allreduce (up to `deadline`); the word every rank got.
  Result<CommandWord> await(Deadline deadline);
  // Join (Note [Trainer step]): the stop flag alone, agreed at an epoch boundary (blocks).
  Result<bool> agreeOnStop(comm::Backend& backend, bool mine, Deadline deadline);

 private:
  int32_t word_[2] = {0, 0};  // [stop, checkpoint now]
  int32_t stopOnly_ = 0;
  comm::WorkPtr work_;
};

}  // namespace ddp::runtime
