#pragma once
// PowerSgdHookBase: what PowerSgdHook and BatchedPowerSgdHook share: options and their
// validation, the plain-allreduce phase before the start iteration, the iteration counter,
// compression statistics, and checkpointable state (saveState / loadState, Note [PowerSGD state
// keys] in powersgd_state.h).
//
// Thread model: run() on the reducer's comm thread, finish() on the step-completing thread
// (Note [Hook ordering]); the state's maps, iteration and statistics are guarded by mu_.
// Per-tensor buffers are touched only by the run()/finish() of the bucket holding the tensor
// (one bucket per tensor per step), so the heavy work runs outside the lock. saveState(),
// loadState() and compressionStats() may be called from any thread, but save/load only
// between steps (no bucket in flight).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "worker/comm/backend.h"
#include "worker/ddp/comm_hook.h"
#include "worker/ddp/powersgd_options.h"
#include "worker/ddp/powersgd_state.h"

namespace ddp {

class PowerSgdHookBase : public CommHook {
 public:
  // Invalid options do not throw: run() then fails with options.validate()'s status.
  PowerSgdHookBase(comm::Backend& backend, PowerSgdOptions options, std::string name);

  std::string name() const override { return name_; }
  bool hasState() const override { return true; }
  // The framed state of this rank (powersgd_state.h), every error materialised (Note [Deferred
  // error feedback] in kernels/powersgd_ops.h).
  Result<std::string> saveState() const override;
  // Replaces the state. DataLoss on corrupt bytes; InvalidArgument for another hook's state;
  // another world size follows options().worldSizeChangePolicy (docs/POWERSGD.md).
  Status loadState(std::string_view bytes) override;

  const PowerSgdOptions& options() const { return options_; }
  // OK, or why the options are invalid.
  const Status& optionsStatus() const { return optionsStatus_; }
  CompressionStats compressionStats() const;
  // Steps completed (advanced by the last bucket of each step).
  uint64_t iteration() const;
  // A copy of the whole state, every error materialised as in saveState (for tests and
  // diagnostics).
  PowerSgdState stateSnapshot() const;

 protected:
  // Preconditions every bucket must meet: f32/f16/bf16, on the CPU, gradient views of the
  // buffer's dtype inside the buffer.
  Status checkBucket(const GradBucket& bucket) const;
  // The averaging allreduce used before the start iteration.
  Result<HookResult> runAllreduce(GradBucket& bucket);
  // Adds one compressed bucket to the statistics; logs them on the last bucket when due.
  void account(const GradBucket& bucket, uint64_t numelBefore, uint64_t numelAfter);
  // Advances the iteration when `isLast`. Called from finish().
  void advance(bool isLast);
  // Deterministic seed for a fresh Q of `key` at `iteration` (Note [PowerSGD state keys]).
  uint64_t qSeed(uint64_t iteration, uint64_t key) const;
  // Refills the all-zero columns of a warm-start Q (rows x r, row-major) with seeded normals
  // (Note [Zero columns in Gram-Schmidt] in kernels/powersgd_ops.h).
  static void refillZeroColumns(float* q, size_t rows, size_t r, uint64_t seed);
  // Half buckets (f16 / bf16, e.g. under an fp16 wrapper) are compressed in f32: the working
  // f32 view of `buf` is its own memory for f32, else `scratch` filled by a cast; writeBack
  // casts the result into a half bucket (no-op for f32).
  static Result<float*> workingCopy(const comm::BufferView& buf, std::vector<float>& scratch);
  static Status writeBack(const comm::BufferView& buf, const float* work);
  // Turns every deferred error of `state` into the error itself (Note [Deferred error feedback]
  // in kernels/powersgd_ops.h); InternalError if a tensor's buffers disagree with its shape.
  Status materializeErrors(PowerSgdState& state) const;
  // Drops cached per-layout plans (after loadState).
  virtual void clearPlans() = 0;

  comm::Backend& backend_;
  const PowerSgdOptions options_;
  const Status optionsStatus_;
  const std::string name_;
  mutable std::mutex mu_;
  PowerSgdState state_;  // guarded by mu_ (maps, counters); see the thread model for buffers
};

// Drops the plans (per-layout scratch, keyed by bucket identity) of layouts not run in the last
// two iterations, e.g. the layout before the bucket rebuild. Plans need a `lastIteration`.
template <typename PlanMap>
void evictStalePlans(PlanMap& plans, uint64_t iteration) {
  for (auto it = plans.begin(); it != plans.end();) {
    if (it->second->lastIteration + 2 <= iteration) it = plans.erase(it);
    else ++it;
  }
}

// The state key of gradient i of `bucket`: the parameter's name, or "bucket <identity>/<i>".
std::string tensorKey(const GradBucket& bucket, size_t i);

}  // namespace ddp
