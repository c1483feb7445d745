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

// `out` = every rank's buffer folded in rank order (rank 0's, then rank 1's folded in, ...):
// rank r's out.count elements start at all + r * stride. An average divides that sum once. Ranks
// that fold the same buffers get the same bits (the small allreduces: Note [Small ops through
// the page], Note [Direct small allreduce]). `out` must not overlap the slots of ranks 1 and up.
void foldInRankOrder(const char* all, size_t stride, int ranks, BufferView out, ReduceOp op);

}  // namespace ddp::comm
