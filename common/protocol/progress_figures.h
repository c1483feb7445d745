#pragma once
// The training figures a heartbeat carries (docs/API.md, "Heartbeats"): step, totalSteps,
// epoch, epochs, loss, samplesPerSecond, and the optional testAccuracy, valLoss,
// tokensPerSecond and mfu. copyProgressFigures copies them between the structs that hold them
// (the worker's TrainingProgress into its Heartbeat; the controller's decoded Heartbeat
// into the job's JobProgress): the one list of these fields, so a new figure is added once.
// Thread model: pure function.

#include <optional>

namespace ddp::protocol {

// What an absent optional figure does to the destination: clears it (a heartbeat says what the
// worker knows now), or keeps its last value (a job's progress between evaluations).
enum class AbsentFigures { kClear, kKeepLast };

template <class From, class To>
void copyProgressFigures(const From& from, To* to, AbsentFigures absent = AbsentFigures::kClear) {
  to->step = from.step;
  to->totalSteps = from.totalSteps;
  to->epoch = static_cast<decltype(to->epoch)>(from.epoch);
  to->epochs = static_cast<decltype(to->epochs)>(from.epochs);
  to->loss = from.loss;
  to->samplesPerSecond = from.samplesPerSecond;
  auto optional = [absent](const std::optional<double>& v, std::optional<double>* out) {
    if (v || absent == AbsentFigures::kClear) *out = v;
  };
  optional(from.testAccuracy, &to->testAccuracy);
  optional(from.valLoss, &to->valLoss);
  optional(from.tokensPerSecond, &to->tokensPerSecond);
  optional(from.mfu, &to->mfu);
}

}  // namespace ddp::protocol
