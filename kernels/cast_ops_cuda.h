#pragma once
// CUDA implementations behind kernels/cast_ops.h and kernels/bucket_ops.h (built only with
// DDP_WITH_CUDA; callers go through the device-dispatching functions, never these directly).
// Preconditions (checked by the dispatchers): both views on the same CUDA device, equal counts,
// floating dtypes. Each call runs on the default stream and synchronises before returning.
// Thread model: stateless.

#include <cuda_runtime.h>

#include <cstddef>

#include "common/status.h"
#include "kernels/flat_view.h"

namespace ddp::kernels::cuda {

Status castScaled(FlatView dst, FlatView src, double scale);
Status axpby(FlatView dst, double alpha, FlatView src, double beta);
Status fillZero(FlatView buf);
// dst (n bf16 values) = src (n floats) rounded to nearest even, queued on `stream` without
// synchronising: the operand copies of the bf16 matmuls (Note [bf16 matmuls] in
// kernels/bf16_ops.h), ordered with the other work of that stream.
Status castToBf16Async(cudaStream_t stream, const float* src, void* dst, size_t n);

}  // namespace ddp::kernels::cuda
