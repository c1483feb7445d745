// CPU twins of the bf16 matmuls (kernels/bf16_ops.h, Note [bf16 matmuls]): the operands are
// rounded to bf16 into fp32 copies, and OpenBLAS's sgemm multiplies the copies (each product of
// two bf16 values is exact in fp32; the sums are fp32, as cuBLAS's CUBLAS_COMPUTE_32F).
#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/bf16_ops.h"
#include "kernels/cpu_vector_math.h"
#include "kernels/layer_ops.h"

namespace ddp::kernels::cpu {
namespace {

// Branch-free twin of roundToBf16 (ddp::floatToBf16's rounding and NaN rule) so that the loop
// over it vectorizes.
inline float roundBf16Bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quietNan = (u | 0x00400000u) & 0xffff0000u;
  return std::bit_cast<float>((u & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

std::vector<float> rounded(const float* src, size_t n) {
  std::vector<float> out(n);
  roundToBf16N(src, out.data(), n);
  return out;
}

void gemmStrided(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, m, n, k,
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// In place over row[0, len): softmax with std::exp (the CUDA kernel's expf); row[len, width) = 0.
void causalSoftmaxRow(float* row, int len, int width) {
  float mx = row[0];
  for (int j = 1; j < len; ++j) mx = std::max(mx, row[j]);
  float sum = 0.f;
  for (int j = 0; j < len; ++j) sum += (row[j] = std::exp(row[j] - mx));
  const float inv = 1.f / sum;
  for (int j = 0; j < len; ++j) row[j] *= inv;
  std::fill(row + len, row + width, 0.f);
}

// dS over [0, len) in place on dp: p * (dp - <p, dp>); dp[len, width) = 0.
void causalSoftmaxBackwardRow(const float* p, float* dp, int len, int width) {
  float dot = 0.f;
  for (int j = 0; j < len; ++j) dot += p[j] * dp[j];
  for (int j = 0; j < len; ++j) dp[j] = p[j] * (dp[j] - dot);
  std::fill(dp + len, dp + width, 0.f);
}

// One (batch, head) slice of the attention tensors (layout of kernels/transformer_ops.h).
struct Slice {
  int64_t ld, ldo, qkv, out, probs;
  Slice(int b, int h, int seq, int heads, int headDim)
      : ld(3 * int64_t{heads} * headDim),
        ldo(int64_t{heads} * headDim),
        qkv(int64_t{b} * seq * ld + int64_t{h} * headDim),
        out(int64_t{b} * seq * ldo + int64_t{h} * headDim),
        probs((int64_t{b} * heads + h) * seq * seq) {}
};

}  // namespace

DDP_VECTOR_CLONES void roundToBf16N(const float* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = roundBf16Bits(src[i]);
}

void gemmBf16(bool transA, bool transB, int m, int n, int k, float alpha, const float* a, const float* b,
              float beta, float* c) {
  if (m == 0 || n == 0) return;
  const std::vector<float> ra = rounded(a, static_cast<size_t>(m) * k);
  const std::vector<float> rb = rounded(b, static_cast<size_t>(k) * n);
  gemm(transA, transB, m, n, k, alpha, ra.data(), rb.data(), beta, c);
}

void causalAttentionForwardBf16(const float* qkv, int batch, int seq, int heads, int headDim, float* out,
                                float* probs) {
  if (batch == 0 || seq == 0 || heads == 0 || headDim == 0) return;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  const int64_t hd = int64_t{heads} * headDim;
  const std::vector<float> r = rounded(qkv, static_cast<size_t>(batch) * seq * 3 * hd);
  std::vector<float> pr(static_cast<size_t>(seq) * seq);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const Slice s(b, h, seq, heads, headDim);
      const float* q = r.data() + s.qkv;
      float* p = probs + s.probs;
      // S = scale Q K^T; P = causal softmax(S) (saved in fp32); O = bf16(P) V.
      gemmStrided(false, true, seq, seq, headDim, scale, q, s.ld, q + hd, s.ld, 0.f, p, seq);
      for (int i = 0; i < seq; ++i) causalSoftmaxRow(p + int64_t{i} * seq, i + 1, seq);
      roundToBf16N(p, pr.data(), pr.size());
      gemmStrided(false, false, seq, headDim, seq, 1.f, pr.data(), seq, q + 2 * hd, s.ld, 0.f, out + s.out, s.ldo);
    }
  }
}

void causalAttentionBackwardBf16(const float* qkv, const float* probs, const float* dout, int batch, int seq,
                                 int heads, int headDim, float* dqkv) {
  if (batch == 0 || seq == 0 || heads == 0 || headDim == 0) return;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  const int64_t hd = int64_t{heads} * headDim, rows = int64_t{batch} * seq;
  const std::vector<float> r = rounded(qkv, static_cast<size_t>(rows * 3 * hd));
  const std::vector<float> dOr = rounded(dout, static_cast<size_t>(rows * hd));
  std::vector<float> pr(static_cast<size_t>(seq) * seq), ds(pr.size());
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const Slice s(b, h, seq, heads, headDim);
      const float* q = r.data() + s.qkv;
      const float* p = probs + s.probs;
      const float* dO = dOr.data() + s.out;
      float* dq = dqkv + s.qkv;
      roundToBf16N(p, pr.data(), pr.size());
      // dV = bf16(P)^T dO; dP = dO V^T; dS = P (dP - <P, dP>) in fp32; dQ = scale bf16(dS) K;
      // dK = scale bf16(dS)^T Q.
      gemmStrided(true, false, seq, headDim, seq, 1.f, pr.data(), seq, dO, s.ldo, 0.f, dq + 2 * hd, s.ld);
      gemmStrided(false, true, seq, seq, headDim, 1.f, dO, s.ldo, q + 2 * hd, s.ld, 0.f, ds.data(), seq);
      for (int i = 0; i < seq; ++i) {
        causalSoftmaxBackwardRow(p + int64_t{i} * seq, ds.data() + int64_t{i} * seq, i + 1, seq);
      }
      roundToBf16N(ds.data(), ds.data(), ds.size());
      gemmStrided(false, false, seq, headDim, seq, scale, ds.data(), seq, q + hd, s.ld, 0.f, dq, s.ld);
      gemmStrided(true, false, seq, headDim, seq, scale, ds.data(), seq, q, s.ld, 0.f, dq + hd, s.ld);
    }
  }
}

}  // namespace ddp::kernels::cpu
