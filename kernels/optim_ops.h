#pragma once
// Fused optimizer kernels over flat f32 tensors: Adam / AdamW, SGD (momentum, dampening,
// nesterov, weight decay), sum of squares and scaling. Each op has a CPU twin (the oracle,
// `...Cpu`) and a CUDA implementation (`...Cuda`, compiled with DDP_WITH_CUDA) that runs a
// multi-tensor kernel: one launch updates every tensor in the list (Note [Multi-tensor apply]).
//
// Semantics follow PyTorch's torch.optim (Note [Optimizer semantics] in optim_ops.cc):
//   Adam:  g' = g*gradScale (+ wd*p unless decoupled); AdamW: p *= 1 - lr*wd first;
//          m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2;
//          p -= (lr / (1-b1^t)) * m / (sqrt(v) / sqrt(1-b2^t) + eps)   (eps outside the sqrt)
//   SGD:   d = g*gradScale + wd*p; if momentum: buf = d on the first step, else
//          buf = momentum*buf + (1-dampening)*d; d = nesterov ? d + momentum*buf : buf;
//          p -= lr*d
// `gradScale` folds gradient averaging and clip-by-norm into the update without another pass.
//
// Thread model: pure functions; the CPU twin runs on the caller's thread. CUDA versions take
// device pointers, launch on the default stream and synchronise before returning.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace ddp::kernels {

struct AdamHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weightDecay = 0.f;
  bool decoupled = false;  // true: AdamW
};

struct SgdHyper {
  float lr = 1e-2f;
  float momentum = 0.f;
  float dampening = 0.f;
  float weightDecay = 0.f;
  bool nesterov = false;
};

// One tensor of a multi-tensor Adam step. Every pointer covers `n` elements.
struct AdamTensor {
  float* param = nullptr;
  const float* grad = nullptr;
  float* expAvg = nullptr;
  float* expAvgSq = nullptr;
  size_t n = 0;
  int64_t step = 1;  // the step count after this update (1 on the first update)
};

// One tensor of a multi-tensor SGD step. `momentumBuf` may be null when momentum == 0.
struct SgdTensor {
  float* param = nullptr;
  const float* grad = nullptr;
  float* momentumBuf = nullptr;
  size_t n = 0;
  bool firstStep = true;  // the momentum buffer is initialised from the gradient
};

// CPU twins.
void adamStepCpu(const std::vector<AdamTensor>& tensors, const AdamHyper& h, float gradScale = 1.f);
void sgdStepCpu(const std::vector<SgdTensor>& tensors, const SgdHyper& h, float gradScale = 1.f);
// Sum of squares accumulated in double.
double sumSquaresCpu(const float* x, size_t n);
void scaleCpu(float* x, size_t n, float alpha);

// CUDA versions (device pointers). Without CUDA in the build they return Unimplemented.
Status adamStepCuda(const std::vector<AdamTensor>& tensors, const AdamHyper& h, float gradScale = 1.f);
Status sgdStepCuda(const std::vector<SgdTensor>& tensors, const SgdHyper& h, float gradScale = 1.f);
Result<double> sumSquaresCuda(const float* x, size_t n);
Status scaleCuda(float* x, size_t n, float alpha);

}  // namespace ddp::kernels
