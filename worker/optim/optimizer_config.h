#pragma once
// OptimizerConfig: which update rule (SGD, Adam, AdamW) and its hyperparameters, with
// PyTorch's defaults. One config drives a plain Optimizer, ZeroRedundancyOptimizer's local
// optimizer and optimizer-in-backward.
// Thread model: plain value.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "kernels/optim_ops.h"

namespace ddp::optim {

enum class OptimizerKind : uint8_t { kSgd = 0, kAdam = 1, kAdamW = 2 };
const char* optimizerKindName(OptimizerKind kind);  // "sgd", "adam", "adamw"
bool parseOptimizerKind(const std::string& name, OptimizerKind* out);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float lr = 1e-3f;
  float weightDecay = 0.f;  // PyTorch's AdamW defaults to 1e-2: use adamw() for that default
  // SGD
  float momentum = 0.f;
  float dampening = 0.f;
  bool nesterov = false;
  // Adam / AdamW
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;

  static OptimizerConfig sgd(float lr, float momentum = 0.f, float dampening = 0.f,
                             float weightDecay = 0.f, bool nesterov = false);
  static OptimizerConfig adam(float lr = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
                              float eps = 1e-8f, float weightDecay = 0.f);
  static OptimizerConfig adamw(float lr = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
                               float eps = 1e-8f, float weightDecay = 1e-2f);

  // Rejects what PyTorch rejects: negative lr / momentum / weight decay, betas outside [0, 1),
  // eps < 0, nesterov without momentum or with dampening.
  Status validate() const;
  // Optimizer-state floats per parameter element: SGD 0 (1 with momentum), Adam/AdamW 2.
  int slotsPerElement() const;

  kernels::AdamHyper adamHyper() const;
  kernels::SgdHyper sgdHyper() const;
};

}  // namespace ddp::optim
