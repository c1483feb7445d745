#include "kernels/optim_ops.h"

#include <cmath>

#include "kernels/cpu_vector_math.h"

namespace ddp::kernels {

// Note [Optimizer semantics]
// The update rules are PyTorch's single-tensor implementations (torch/optim/adam.py, sgd.py):
//  - Adam's bias corrections are computed in double from the per-tensor step count, like
//    Python floats; the step size lr / (1 - b1^t) and sqrt(1 - b2^t) are then applied in f32.
//  - eps is added after the square root and after dividing by sqrt(bias_correction2).
//  - Adam's weight decay is L2 (added to the gradient); AdamW's is decoupled (p *= 1 - lr*wd
//    before the moment updates).
//  - SGD's momentum buffer is a clone of the (decayed) gradient on the first step: dampening
//    does not apply to it.
// The CUDA kernels evaluate the same expressions in the same order, so the twin agrees with
// them to a few ulps (fused multiply-add may differ).
//
// The CPU steps are elementwise and carry DDP_VECTOR_CLONES (Note [Vector clones]): this file is
// compiled with -fno-math-errno (std::sqrt of a second moment, never negative, then needs no
// errno branch and vectorizes) and -ffp-contract=off (no clone fuses), so every clone gives the
// SSE2 code's bits. Adam's loop was scalar before (a sqrt and two divides per element: 4.7 ns,
// 13 % of the CNN's step on one worker).

DDP_VECTOR_CLONES void adamStepCpu(const std::vector<AdamTensor>& tensors, const AdamHyper& h, float gradScale) {
  for (const AdamTensor& t : tensors) {
    const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(t.step));
    const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(t.step));
    const float stepSize = static_cast<float>(h.lr / bc1);
    const float bc2Sqrt = static_cast<float>(std::sqrt(bc2));
    const float b1 = h.beta1, b2 = h.beta2, omb1 = 1.f - h.beta1, omb2 = 1.f - h.beta2;
    const float eps = h.eps;
    const float l2 = h.decoupled ? 0.f : h.weightDecay;
    const float decay = h.decoupled ? 1.f - h.lr * h.weightDecay : 1.f;
    float* __restrict p = t.param;
    const float* __restrict g = t.grad;
    float* __restrict m = t.expAvg;
    float* __restrict v = t.expAvgSq;
    for (size_t i = 0; i < t.n; ++i) {
      float pi = p[i] * decay;
      const float gi = g[i] * gradScale + l2 * pi;
      const float mi = b1 * m[i] + omb1 * gi;
      const float vi = b2 * v[i] + omb2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const float denom = std::sqrt(vi) / bc2Sqrt + eps;
      p[i] = pi - stepSize * (mi / denom);
    }
  }
}

DDP_VECTOR_CLONES void sgdStepCpu(const std::vector<SgdTensor>& tensors, const SgdHyper& h, float gradScale) {
  for (const SgdTensor& t : tensors) {
    float* __restrict p = t.param;
    const float* __restrict g = t.grad;
    float* __restrict buf = t.momentumBuf;
    const float wd = h.weightDecay, lr = h.lr, mom = h.momentum, omd = 1.f - h.dampening;
    if (mom == 0.f) {
      for (size_t i = 0; i < t.n; ++i) p[i] -= lr * (g[i] * gradScale + wd * p[i]);
      continue;
    }
    for (size_t i = 0; i < t.n; ++i) {
      const float d = g[i] * gradScale + wd * p[i];
      const float b = t.firstStep ? d : mom * buf[i] + omd * d;
      buf[i] = b;
      const float upd = h.nesterov ? d + mom * b : b;
      p[i] -= lr * upd;
    }
  }
}

double sumSquaresCpu(const float* x, size_t n) {
  // Four partial sums keep the loop vectorisable and the rounding small.
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(x[i]) * x[i];
    s1 += static_cast<double>(x[i + 1]) * x[i + 1];
    s2 += static_cast<double>(x[i + 2]) * x[i + 2];
    s3 += static_cast<double>(x[i + 3]) * x[i + 3];
  }
  for (; i < n; ++i) s0 += static_cast<double>(x[i]) * x[i];
  return (s0 + s1) + (s2 + s3);
}

void scaleCpu(float* x, size_t n, float alpha) {
  for (size_t i = 0; i < n; ++i) x[i] *= alpha;
}

#ifndef DDP_WITH_CUDA
Status adamStepCuda(const std::vector<AdamTensor>&, const AdamHyper&, float) {
  return unimplemented("adamStepCuda: built without CUDA");
}
Status sgdStepCuda(const std::vector<SgdTensor>&, const SgdHyper&, float) {
  return unimplemented("sgdStepCuda: built without CUDA");
}
Result<double> sumSquaresCuda(const float*, size_t) {
  return unimplemented("sumSquaresCuda: built without CUDA");
}
Status scaleCuda(float*, size_t, float) { return unimplemented("scaleCuda: built without CUDA"); }
#endif

}  // namespace ddp::kernels
