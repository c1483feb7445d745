#pragma once
// CUDA implementations behind kernels/powersgd_ops.h (compiled only with DDP_WITH_CUDA).
// Preconditions are checked by the dispatching functions in powersgd_ops.cc.
// Thread model: as kernels/powersgd_ops.h.

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

namespace ddp::kernels::powersgd::cuda {

Status errorFeedbackAdd(Device device, float* grad, const float* error, size_t n, void* stream);
Status errorFeedbackUpdate(Device device, float* buffer, float* approx, size_t n, void* stream);
Status scale(Device device, float* x, size_t n, float alpha, void* stream);
// sum = grad + (sum - prevP prevQ^T) per element (grad + sum when prevP == nullptr); the
// product as a fused multiply-add chain over k from zero (kernels/powersgd_ops.h).
Status compensate(Device device, const float* grad, float* sum, const float* prevP, const float* prevQ, size_t rows,
                  size_t cols, size_t r, void* stream);
// Precondition: batch, n, r > 0 and epsilon >= 0.
Status orthogonalize(Device device, float* matrices, size_t batch, size_t n, size_t r, float epsilon,
                     void* stream);

}  // namespace ddp::kernels::powersgd::cuda
