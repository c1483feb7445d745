#pragma once
// Optimizer: an elementwise optimizer over a list of Parameters (SGD, Adam, AdamW), PyTorch
// semantics (kernels/optim_ops.h). The base class owns the per-parameter state and its
// save/load; subclasses apply the update rule through the fused kernels.
//
// Contract:
//  - Parameters are f32 on the CPU (CUDA parameters are rejected with Unimplemented at
//    construction: the CUDA kernels exist and are tested, the device state allocator does not).
//  - step() updates every parameter whose grad is non-null; a parameter with grad == nullptr is
//    skipped, like PyTorch's `p.grad is None`. The step count is per parameter, so stepping a
//    subset (stepParameters, optimizer in backward) equals stepping all at once.
//  - lr is settable between steps (schedules are applied by the trainer).
//  - stateDict() is an OptimizerState frame (optimizer_state.h) keyed by parameter position.
// Thread model: not thread-safe; one training thread (or the reducer's callback thread while
// the training thread waits) calls it.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/core/parameter.h"
#include "worker/optim/optimizer_config.h"
#include "worker/optim/optimizer_state.h"

namespace ddp::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  std::string name() const { return optimizerKindName(config_.kind); }
  const OptimizerConfig& config() const { return config_; }
  const std::vector<Parameter*>& parameters() const { return params_; }

  // One update of every parameter with a gradient. `gradScale` multiplies every gradient
  // first (averaging, clipping) without modifying it.
  Status step(float gradScale = 1.f);
  // One update of the parameters at these positions (in parameters()).
  Status stepParameters(std::span<const size_t> indices, float gradScale = 1.f);

  float lr() const { return config_.lr; }
  void setLr(float lr) { config_.lr = lr; }

  const ParamState& state(size_t i) const { return states_[i]; }
  // Replaces one parameter's state; slot sizes must match the parameter and the kind.
  Status setState(size_t i, ParamState state);
  // Bytes of optimizer state held now (slot floats).
  size_t stateBytes() const;

  // The full state of this optimizer as an OptimizerState (record index = position here).
  OptimizerState exportState() const;
  std::string stateDict() const { return exportState().encode(); }
  // Loads a state produced by stateDict() (or a merged ZeRO state): same kind, one record per
  // parameter with matching numel. Restores the hyperparameters too (like PyTorch).
  Status loadStateDict(std::string_view frame);
  Status importState(const OptimizerState& state);

  // Sets every gradient to zero (grads stay allocated).
  void zeroGrad();

 protected:
  Optimizer(std::vector<Parameter*> params, OptimizerConfig config);
  // Applies the rule to these parameters (all have grads); states_ are sized for them.
  virtual void applyUpdate(const std::vector<size_t>& indices, float gradScale) = 0;

  OptimizerConfig config_;
  std::vector<Parameter*> params_;
  std::vector<ParamState> states_;
};

// Checks the config and the parameters (f32, CPU, non-null data), then builds Sgd or Adam.
Result<std::unique_ptr<Optimizer>> makeOptimizer(const OptimizerConfig& config,
                                                 std::vector<Parameter*> params);

}  // namespace ddp::optim
