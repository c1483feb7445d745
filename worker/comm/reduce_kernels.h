#pragma once
// Element-wise reduction kernels for every DType x ReduceOp, with the signature Gloo's
// allreduce takes (out, a, b, n). Shared by GlooBackend's own ring algorithms and by the fused
// (coalesced) path.
// Thread model: pure functions.

#include <cstddef>

#include "worker/comm/half_reduce.h"
#include "worker/comm/types.h"

namespace ddp::comm {

// The kernel for (dtype, op); kAvg maps to the sum kernel (finish with divideInPlace).
ReduceKernel reduceKernel(DType dtype, ReduceOp op);

// buf[i] /= divisor for every element (integers: truncation toward zero; f16/bf16 in f32).
void divideInPlace(BufferView buf, int divisor);

}  // namespace ddp::comm
