#include "worker/training/command_word.h"

namespace ddp::runtime {

CommandAction commandAction(const CommandWord& agreed) {
  if (agreed.stop) return CommandAction::kStop;
  if (agreed.checkpointNow) return CommandAction::kCheckpoint;
  return CommandAction::kNone;
}

bool commandWordDue(int64_t step, int everySteps, bool join) { return !join && step % everySteps == 0; }

void CommandWordAgreement::issue(comm::Backend& backend, const CommandWord& mine) {
  word_[0] = mine.stop ? 1 : 0;
  word_[1] = mine.checkpointNow ? 1 : 0;
  work_ = backend.allreduce(comm::viewOf(word_, 2), comm::ReduceOp::kMax);
}

Result<CommandWord> CommandWordAgreement::await(Deadline deadline) {
  if (!work_) return failedPrecondition("command word: nothing issued");
  const comm::WorkPtr work = std::move(work_);
  DDP_RETURN_IF_ERROR(work->wait(deadline).withContext("stop-flag allreduce"));
  return CommandWord{word_[0] != 0, word_[1] != 0};
}

Result<bool> CommandWordAgreement::agreeOnStop(comm::Backend& backend, bool mine, Deadline deadline) {
  stopOnly_ = mine ? 1 : 0;
  auto work = backend.allreduce(comm::viewOf(&stopOnly_, 1), comm::ReduceOp::kMax);
  DDP_RETURN_IF_ERROR(work->wait(deadline));
  return stopOnly_ != 0;
}

}  // namespace ddp::runtime
