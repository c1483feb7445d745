#pragma once
// Stream-ordered f16/bf16 <-> f32 casts used by NcclBackend to reduce half types in f32
// (Note [NCCL semantics] in nccl_backend.h). CUDA builds only; `stream` is a cudaStream_t.
// Thread model: stateless; kernels are enqueued on `stream` and not waited for.

#include <cstddef>

namespace ddp::comm {

// dst[i] = float(src[i]); src holds f16 (bf16 = false) or bf16 values. Returns a cudaError_t.
int castHalfToF32(const void* src, float* dst, size_t n, bool bf16, void* stream);
// dst[i] = half(src[i]) rounded to nearest even. Returns a cudaError_t.
int castF32ToHalf(const float* src, void* dst, size_t n, bool bf16, void* stream);

}  // namespace ddp::comm
