#pragma once
// Hand-written CPU kernels behind the PowerSGD products of kernels/powersgd_ops.h (internal to
// ddp_kernels; use powersgd_ops.h).
//
// Note [Skinny PowerSGD products on the CPU]
// With rank r of 1..8 the three products P = M Q, Q = M^T P and M~ = P Q^T do 2r flops per
// element of M: they are bound by memory, not arithmetic. sgemm spends most of its time packing
// M into its panel layout (a full extra read and write of M per product) for a tiny r. These
// kernels stream M once, row by row, against Q transposed (r x cols, small and cache resident):
//  - P: one dot product per (row, k), r vector accumulators per row; the error-feedback add
//    M += E is done on the same loaded vector (one pass: read M and E, write M);
//  - Q: Q^T (r x cols) accumulates p[i][k] * row i of M, eight rows at a time so each slice of
//    Q^T is loaded and stored once per eight rows (one pass: read M);
//  - M~ and the error: per row, M~ = sum_k p[i][k] * Q^T[k], then E = M - M~ and M = M~ are
//    stored from registers (one pass: read M, write M and E).
// An AVX2 + FMA version is chosen at run time when the CPU has it, else portable loops run. The
// summation order differs from sgemm's (float reassociation only); within one build on one
// machine the results are deterministic, which is what bitwise save/resume needs.
//
// Thread model: stateless; per-thread scratch (Q transposed) is thread_local.

#include <cstddef>

namespace ddp::kernels::powersgd::cpu {

// P (rows x r) = M Q with Q (cols x r); when `error` != nullptr, first M += error (M keeps the
// sum, same elements as a separate add).
void addErrorAndComputeP(float* m, const float* error, const float* q, float* p, size_t rows, size_t cols,
                         size_t r);
// Q (cols x r) = M^T P with P (rows x r).
void computeQ(const float* m, const float* p, float* q, size_t rows, size_t cols, size_t r);
// M~ = P Q^T. With `error` == nullptr: M = M~ (M is only written, with streaming stores: Note
// [Streaming the error out]). Else error = M - M~, then M = M~.
void decompress(float* m, const float* p, const float* q, float* error, size_t rows, size_t cols, size_t r);

// Note [Deferred error feedback] in powersgd_ops.h: per element e = sum - prevP prevQ^T (or e =
// sum when prevP == nullptr), sum = grad + e; then P (rows x r) = sum Q. grad is only read.
void compensateAndComputeP(const float* grad, float* sum, const float* prevP, const float* prevQ, const float* q,
                           float* p, size_t rows, size_t cols, size_t r);

// dst[0..n) = src[0..n), dst written with streaming stores (Note [Streaming the error out]): for
// an error copied out of a cache-resident scratch into state read only at the next step.
void streamCopy(float* dst, const float* src, size_t n);

// The same with Q given transposed (qt: r x cols, row-major), for callers that walk one matrix
// in row blocks (the batched hook) and transpose Q once.
void transposeQ(const float* q, size_t cols, size_t r, float* qt);
void addErrorAndComputePTransposed(float* m, const float* error, const float* qt, float* p, size_t rows,
                                   size_t cols, size_t r);
// streamError = false stores the error with ordinary stores: for an error that is read back at
// once from the cache (the batched hook's row-block scratch), where streaming stores would send
// it to memory and back.
void decompressTransposed(float* m, const float* p, const float* qt, float* error, size_t rows, size_t cols,
                          size_t r, bool streamError = true);
void compensateAndComputePTransposed(const float* grad, float* sum, const float* prevP, const float* prevQt,
                                     const float* qt, float* p, size_t rows, size_t cols, size_t r);

}  // namespace ddp::kernels::powersgd::cpu
