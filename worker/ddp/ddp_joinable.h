#pragma once
// DdpJoinable: DDP's side of Join (docs/JOIN.md). Wraps a Reducer; the training loop calls
// beginIteration() before forward/backward (the Join notify) and finalize() instead of
// Reducer::finalize() (it applies divideByInitialWorldSize = false).
//
// Join hook:
//  - mainHook: one synced reduction with zero gradients (every parameter marked ready with a
//    zeroed grad, then Reducer::finalize): the same buckets, order and comm hook as the active
//    ranks' backward, so their collectives are matched. Unlike PyTorch's shadow, the reduced
//    gradients land in this rank's Parameter::grad too, so a ZeroRedundancyOptimizer joined
//    after DDP steps its shard with the right gradients. With divideByInitialWorldSize = false
//    they are rescaled by world / active like the active ranks'.
//  - postHook(isLastJoiner): the ranks agree on the last joiner (allreduce max) and broadcast
//    the parameters and `buffers` from it.
// Limits: no_sync inside a Join is rejected (beginIteration returns FailedPrecondition); the
// rescale for divideByInitialWorldSize = false needs f32 gradients, and happens after the
// reducer's bucket callbacks (so optimizer-in-backward assumes the default division).
// Thread model: training thread only, like the Reducer's step methods.

#include <memory>
#include <vector>

#include "worker/ddp/reducer.h"
#include "worker/join/join.h"

namespace ddp {

class DdpJoinable final : public join::Joinable {
 public:
  explicit DdpJoinable(Reducer& reducer, std::vector<comm::BufferView> buffers = {});

  // Call before each iteration's forward/backward.
  Status beginIteration(Deadline deadline);
  // Call after backward instead of reducer.finalize().
  Status finalize(Deadline deadline);

  bool divideByInitialWorldSize() const { return divideByInitialWorldSize_; }
  Reducer& reducer() { return reducer_; }

  std::unique_ptr<join::JoinHook> joinHook(const join::JoinHookOptions& options) override;
  Device joinDevice() const override;
  comm::Backend& joinProcessGroup() override { return reducer_.backend(); }

  // Join hook bodies (public for the hook object).
  Status shadowIteration(Deadline deadline);
  Status syncFinalModel(bool isLastJoiner, Deadline deadline);

 private:
  // grad *= factor on every parameter (f32 only).
  Status scaleGradients(float factor);

  Reducer& reducer_;
  std::vector<comm::BufferView> buffers_;
  bool divideByInitialWorldSize_ = true;
  std::shared_ptr<join::JoinNotification> notification_;  // this iteration's notify
};

}  // namespace ddp
