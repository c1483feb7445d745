#pragma once
// Layer ops of a decoder-only transformer (GPT-2 style): token embedding, LayerNorm, RMSNorm,
// causal multi-head self-attention (materialized), rotary position embedding, residual adds,
// token-level cross-entropy and dropout. As in kernels/layer_ops.h, every op exists twice:
//  - the CPU twin below (namespace ddp::kernels::cpu), the oracle, OpenBLAS for the GEMMs;
//  - the CUDA version (kernels/transformer_ops.cu and attention_ops.cu, cuBLAS + kernels), built
//    with DDP_WITH_CUDA;
// models call them through kernels::LayerOps, whose methods carry the same names, arguments
// and contracts (documented there).
//
// Layout: float32, row-major, contiguous. The attention's qkv is (batch*seq) x (3*heads*headDim),
// each row [q (heads x headDim) | k | v]; its out is (batch*seq) x (heads*headDim); its probs
// batch x heads x seq x seq.
//
// Preconditions (not checked on the data path): token ids in [0, vocab); labels < classes;
// headDim even for RoPE; eps > 0; 0 <= p <= 1 for dropout.
//
// Thread model: the functions are pure (no shared state besides OpenBLAS's thread count); the
// attention functions allocate their scratch rows on the calling thread.

#include <cstddef>
#include <cstdint>

#include "kernels/layer_ops.h"

namespace ddp::kernels {

// Note [Dropout mask]
// Element i of a dropout call with `seed` is kept iff dropoutUniform(seed, i) >= p. The uniform
// is SplitMix64's finalizer applied twice: once to the seed, once to the mixed seed plus
// (i + 1) times the golden-ratio increment; its top 24 bits scaled by 2^-24 (exact in float).
// The function is the same code on the host and on the device, so the CPU and CUDA masks are
// identical bit for bit, and backward recomputes the mask from (seed, i) instead of storing it.
// Kept values are multiplied by scale = 1/(1-p), computed once in float on the host; p >= 1
// drops everything (y = 0), p <= 0 keeps everything (y = x).
DDP_LAYER_OPS_HD inline uint64_t splitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
DDP_LAYER_OPS_HD inline float dropoutUniform(uint64_t seed, uint64_t i) {
  const uint64_t z = splitMix64Finalize(splitMix64Finalize(seed) + (i + 1) * 0x9e3779b97f4a7c15ull);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}
// The factor kept values are multiplied by (0 when p >= 1).
inline float dropoutScale(float p) { return p >= 1.f ? 0.f : 1.f / (1.f - p); }

namespace cpu {

void embeddingForward(const int32_t* ids, int n, const float* table, int dim, float* out,
                      bool accumulate);
// Rows are added in the order i = 0, 1, ..., n-1 (the CUDA version keeps that order per
// vocabulary row, so both give the same bits).
void embeddingBackward(const int32_t* ids, int n, const float* dout, int dim, int vocab,
                       float* dtable, bool accumulate);

void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int dim,
                      float eps, float* y, float* mean, float* rstd);
void layerNormBackward(const float* x, const float* gamma, const float* mean, const float* rstd,
                       const float* dy, int rows, int dim, float* dx, float* dgamma, float* dbeta,
                       bool accumulateParams);

void rmsNormForward(const float* x, const float* gamma, int rows, int dim, float eps, float* y,
                    float* rstd);
void rmsNormBackward(const float* x, const float* gamma, const float* rstd, const float* dy,
                     int rows, int dim, float* dx, float* dgamma, bool accumulateParams);

// Note [CPU causal attention]
// Per (batch, head), query rows are taken in blocks of kAttentionRowBlock: the block's scores
// against keys 0..(last row of the block) are one GEMM straight on the strided head slices of
// qkv (lda = 3*heads*headDim, no copies), the softmax runs only over j <= i, and P V is a second
// GEMM. Keys after the block are never multiplied, so the GEMMs do about half the work of the
// full seq x seq products (plus one block's triangle). Backward walks the same blocks: dP, dS,
// dQ for the block, and dK, dV accumulated over blocks.
constexpr int kAttentionRowBlock = 64;
void causalAttentionForward(const float* qkv, int batch, int seq, int heads, int headDim,
                            float* out, float* probs);
void causalAttentionBackward(const float* qkv, const float* probs, const float* dout, int batch,
                             int seq, int heads, int headDim, float* dqkv);

// Note [RoPE angles]
// Pair (2i, 2i+1) of a head at position pos turns by pos * base^(-2i/headDim), evaluated in
// double (pow, cos, sin) and rounded to float once per (pos, i), on the CPU and on the GPU
// alike, so both rotate by the same float cos/sin up to the last bit of libm vs CUDA's double
// functions.
void ropeForward(float* qkv, int batch, int seq, int heads, int headDim, float base);
void ropeBackward(float* dqkv, int batch, int seq, int heads, int headDim, float base);

void addInPlace(float* y, const float* x, size_t n);

void crossEntropyInPlace(float* logits, const int32_t* labels, int rows, int classes, float scale,
                         float* rowLoss, int32_t* rowCorrect);

void dropoutForward(const float* x, float* y, size_t n, float p, uint64_t seed);
void dropoutBackward(const float* dy, float* dx, size_t n, float p, uint64_t seed);

}  // namespace cpu
}  // namespace ddp::kernels
