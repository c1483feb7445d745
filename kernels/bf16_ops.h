#pragma once
// The bf16 matmuls of the GPT (spec.precision: bf16): GEMMs whose operands are rounded to bf16
// and whose products are accumulated and written in fp32. Every op exists twice, as the other
// layer ops do:
//  - the CPU twin below (kernels/bf16_ops_cpu.cc), the oracle: OpenBLAS sgemm on bf16-rounded
//    fp32 copies of the operands;
//  - the CUDA version (CudaLayerOps: cublasGemmEx / cublasGemmStridedBatchedEx with CUDA_R_16BF
//    operands, CUBLAS_COMPUTE_32F and fp32 C, on bf16 copies made by a cast kernel).
// Models call them through kernels::LayerOps (gemmBf16, causalAttentionForwardBf16,
// causalAttentionBackwardBf16), with the arguments and contracts of gemm and causalAttention*.
//
// Note [bf16 matmuls]
// What `spec.precision: bf16` changes, and nothing else:
//  - every GEMM of the GPT, forward and backward, takes its two operands rounded to bf16 (round
//    to nearest even of the fp32 values; NaN stays NaN, a value past bf16's range becomes inf)
//    and accumulates in fp32, writing fp32: the QKV, attention output, MLP up and down
//    projections, the attention score (Q K^T) and value (P V) products, the LM head (tied
//    embedding) and their backward products (dX = dY W, dW = dY^T X; dV = P^T dO, dP = dO V^T,
//    dQ = dS K, dK = dS^T Q). alpha (the 1/sqrt(headDim) score scale) and beta apply in fp32;
//  - the weights stay fp32 (the master copy the optimizer updates); gradients, the gradient
//    reduction, norms, softmax, GELU, cross-entropy, residual adds and the saved attention
//    probabilities stay fp32: only the GEMMs' operand copies are bf16.
// A product of two bf16 values is exact in fp32 (8 + 8 significant bits), so the CPU twin and
// cuBLAS differ only in the order of the fp32 additions (and cuBLAS's tensor-core accumulation
// tree); on both the operands are the same bits.
//
// Thread model: the CPU functions are pure; they allocate their scratch on the calling thread.

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace ddp::kernels {

// x rounded to the nearest bf16 value (ties to even), as a float: the bf16 bits widened.
inline float roundToBf16(float x) { return bf16ToFloat(floatToBf16(x)); }

namespace cpu {

// dst[i] = roundToBf16(src[i]) for i < n (vectorized, same results); dst may alias src.
void roundToBf16N(const float* src, float* dst, size_t n);

// gemm (kernels/layer_ops.h) on bf16-rounded copies of A and B, fp32 accumulation.
void gemmBf16(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c);

// causalAttentionForward / Backward (kernels/transformer_ops.h) with bf16-rounded GEMM operands
// (Note [bf16 matmuls]): q, k, v, the probabilities (for P V and dV), dO and dS are rounded
// where they enter a product; probs is saved unrounded. Per (batch, head) the products are the
// full seq x seq ones, as on the GPU (about twice the fp32 twin's blocked work).
void causalAttentionForwardBf16(const float* qkv, int batch, int seq, int heads, int headDim,
                                float* out, float* probs);
void causalAttentionBackwardBf16(const float* qkv, const float* probs, const float* dout,
                                 int batch, int seq, int heads, int headDim, float* dqkv);

}  // namespace cpu
}  // namespace ddp::kernels
