#pragma once
// Element-wise reductions for f16 and bf16 buffers: out[i] = a[i] (op) b[i], each operation
// done in f32 and rounded back (round to nearest even). Vectorised with F16C + AVX2 when the
// CPU has them (checked once at run time), scalar otherwise; both give identical results.
// `out` may alias `a` or `b`.
// Thread model: pure functions, no shared state (the CPU check is a thread-safe static).

#include <cstddef>
#include <cstdint>

#include "worker/comm/types.h"

namespace ddp::comm {

// Signature shared with Gloo's AllreduceOptions::Func.
using ReduceKernel = void (*)(void* out, const void* a, const void* b, size_t n);

// The kernel for f16 or bf16 and `op` (kAvg uses the sum kernel: the caller divides after).
// Returns nullptr for other dtypes.
ReduceKernel halfReduceKernel(DType dtype, ReduceOp op);
// Forces the scalar path (tests compare both paths).
ReduceKernel halfReduceKernelScalar(DType dtype, ReduceOp op);

// True when the vectorised F16C/AVX2 path is in use on this CPU.
bool halfReduceVectorised();

// In-place division of n f16/bf16 elements by `divisor` (done in f32), used for kAvg.
void halfDivide(DType dtype, void* data, size_t n, float divisor);

}  // namespace ddp::comm
