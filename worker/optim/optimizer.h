#pragma once
// Optimizer: an elementwise optimizer over a list of Parameters (SGD, Adam, AdamW), PyTorch
// semantics (kernels/optim_ops.h). The base class owns the per-parameter state and its
// save/load; subclasses apply the update rule through the fused kernels.
//
// Contract:
//  - Parameters are f32, all on one device: the CPU, or one CUDA device in a CUDA build
//    (Note [Device-resident optimizer state]). makeOptimizer() refuses anything else.
//  - step() updates every parameter whose grad is non-null; a parameter with grad == nullptr is
//    skipped, like PyTorch's `p.grad is None`. The step count is per parameter, so stepping a
//    subset (stepParameters, optimizer in backward) equals stepping all at once.
//  - lr is settable between steps (schedules are applied by the trainer).
//  - stateDict() / hostStateDict() is an OptimizerState frame (optimizer_state.h) keyed by
//    parameter position; the frame is the same for CPU and CUDA optimizers, so either loads a
//    state saved by the other.
// Thread model: not thread-safe; one training thread (or the reducer's callback thread while
// the training thread waits) calls it.
//
// Note [Device-resident optimizer state]
// For CUDA parameters the state slots (momentum buffer; exp_avg, exp_avg_sq) are device buffers
// (kernels::FlatBuffer) on the parameters' device, allocated zeroed on a parameter's first
// step, and step() runs the multi-tensor CUDA kernels of kernels/optim_ops.h on them (one launch
// per step for every tensor; the kernels are tested against their CPU twins). Step counts stay
// on the host. Saving copies the slots to the host into the CPU format; loading copies them
// back. The kernels run on the legacy default stream and synchronise before returning: the
// caller makes sure the gradients are complete first (a model computing on its own stream
// synchronises it; the trainer does, Note [CUDA gradient readiness] in trainer.cc). The
// current CUDA device is set to the parameters' device before every launch.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kernels/flat_buffer.h"
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

  // Which parameters weight decay applies to (mask[i] for parameter i; empty, the default: every
  // one). The others step with weight decay 0 (spec.optimizer.weightDecayOn: linearWeights).
  // Precondition: empty or one entry per parameter.
  void setWeightDecayMask(std::vector<bool> mask) { decayMask_ = std::move(mask); }

  float lr() const { return config_.lr; }
  void setLr(float lr) { config_.lr = lr; }
  // The device every parameter lives on (CPU for an empty list).
  Device device() const { return device_; }

  // The live state of parameter i. CPU optimizers only (DDP_CHECK): on CUDA use hostState().
  const ParamState& state(size_t i) const;
  // Parameter i's state on the host (a copy of the device slots on CUDA).
  Result<ParamState> hostParamState(size_t i) const;
  // Replaces one parameter's state (host values; copied to the device on CUDA). Slot sizes must
  // match the parameter and the kind.
  Status setState(size_t i, ParamState state);
  // Bytes of optimizer state held now (slot floats, on whichever device).
  size_t stateBytes() const;
  // The full state of this optimizer as an OptimizerState (record index = position here).
  // exportState()/stateDict(): CPU optimizers only (DDP_CHECK; ZeRO's local optimizer is).
  // hostState()/hostStateDict(): any device (copies the device slots to the host).
  OptimizerState exportState() const;
  std::string stateDict() const { return exportState().encode(); }
  Result<OptimizerState> hostState() const;
  Result<std::string> hostStateDict() const;
  // Loads a state produced by stateDict() (or a merged ZeRO state): same kind, one record per
  // parameter with matching numel. Restores the hyperparameters too (like PyTorch). On CUDA the
  // slots are copied to the device; on failure the previous state is kept.
  Status loadStateDict(std::string_view frame);
  Status importState(const OptimizerState& state);

  // Sets every gradient to zero (grads stay allocated).
  Status zeroGrad();

 protected:
  // The device is the first parameter's (makeOptimizer checked they all agree).
  Optimizer(std::vector<Parameter*> params, OptimizerConfig config);

  // Applies the rule to these parameters (all have grads); their state slots are allocated:
  // states_ (CPU) or deviceSlots_ (CUDA, with the current device already set).
  virtual Status applyUpdate(const std::vector<size_t>& indices, float gradScale) = 0;
  bool onCuda() const { return device_.isCuda(); }
  // Slot k of parameter i as a float pointer on the optimizer's device.
  float* slot(size_t i, size_t k);

  OptimizerConfig config_;
  std::vector<Parameter*> params_;
  Device device_;
  std::vector<ParamState> states_;  // CPU: steps and slots; CUDA: steps only (slots empty)
  std::vector<std::vector<kernels::FlatBuffer>> deviceSlots_;  // CUDA: slots per parameter
  std::vector<bool> decayMask_;  // setWeightDecayMask; empty: decay every parameter

 private:
  // Allocates parameter i's slots if it has none yet.
  Status ensureSlots(size_t i);
};

// Checks the config and the parameters (f32, one device, CUDA only in a CUDA build, non-null
// data), then builds Sgd or Adam.
Result<std::unique_ptr<Optimizer>> makeOptimizer(const OptimizerConfig& config,
                                                 std::vector<Parameter*> params);

}  // namespace ddp::optim
