#pragma once
// Global gradient norm and clip-by-norm coefficient over a list of Parameters on the CPU or on
// CUDA (torch.nn.utils.clip_grad_norm_ semantics: coefficient maxNorm / (norm + 1e-6) when the
// norm exceeds maxNorm, else 1; the optimizer folds it into its gradScale).
//
// The sum of squares is accumulated in double, per tensor on the tensor's device
// (kernels::sumSquaresCpu / sumSquaresCuda: a device reduction per tensor, one double read
// back), then summed on the host. Parameters without a gradient are skipped. On CUDA the
// gradients must be complete (Note [Device-resident optimizer state] in optimizer.h).
// Thread model: plain functions on the caller's thread.

#include <vector>

#include "common/status.h"
#include "worker/core/parameter.h"

namespace ddp::optim {

// sqrt(sum over parameters of sum(grad^2)). Unimplemented for CUDA gradients in a build
// without CUDA; f32 gradients only.
Result<double> globalGradNorm(const std::vector<Parameter*>& params);

// maxNorm / (norm + 1e-6) if norm > maxNorm, else 1 (also when maxNorm <= 0: no clipping).
float clipCoefficient(double norm, double maxNorm);

}  // namespace ddp::optim
