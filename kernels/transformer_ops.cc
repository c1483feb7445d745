// CPU twins of the transformer ops (kernels/transformer_ops.h): the oracle for the CUDA
// versions, and fast enough to train on: OpenBLAS GEMMs straight on strided head slices for the
// attention, and loops the compiler vectorizes (8 partial sums, expApprox) for the rest, in
// AVX2 / AVX-512 clones where the CPU has them (Note [Vector clones]).
#include "kernels/transformer_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu_vector_math.h"

namespace ddp::kernels::cpu {
namespace {


DDP_VECTOR_CLONES float dot8(const float* a, const float* b, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) part[k] += a[i + k] * b[i + k];
  }
  float s = 0.f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int k = 0; k < 8; ++k) s += part[k];
  return s;
}

// Sum of (x - c)^2.
DDP_VECTOR_CLONES float centeredSquares8(const float* x, float c, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const float d = x[i + k] - c;
      part[k] += d * d;
    }
  }
  float s = 0.f;
  for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  for (int k = 0; k < 8; ++k) s += part[k];
  return s;
}

DDP_VECTOR_CLONES float max8(const float* x, int64_t n) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  float part[8] = {kLow, kLow, kLow, kLow, kLow, kLow, kLow, kLow};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) part[k] = x[i + k] > part[k] ? x[i + k] : part[k];
  }
  float m = kLow;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int k = 0; k < 8; ++k) m = part[k] > m ? part[k] : m;
  return m;
}

// Row-major C = alpha op(A) op(B) + beta C with explicit leading dimensions (strided slices).
void gemmStrided(bool transA, bool transB, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// In place over row[0, len): softmax; row[len, width) = 0.
DDP_VECTOR_CLONES void causalSoftmaxRow(float* row, int len, int width) {
  const float mx = max8(row, len);
  for (int j = 0; j < len; ++j) row[j] = expApprox(row[j] - mx);
  const float inv = 1.f / sum8(row, len);
  for (int j = 0; j < len; ++j) row[j] *= inv;
  std::fill(row + len, row + width, 0.f);
}

// dS over [0, len) in place on dp: p * (dp - <p, dp>); dp[len, width) = 0.
DDP_VECTOR_CLONES void causalSoftmaxBackwardRow(const float* p, float* dp, int len, int width) {
  const float d = dot8(p, dp, len);
  for (int j = 0; j < len; ++j) dp[j] = p[j] * (dp[j] - d);
  std::fill(dp + len, dp + width, 0.f);
}

// Where one (batch, head) slice of the attention tensors starts, and the row strides
// (Note [CPU causal attention]).
struct HeadSlices {
  int64_t qkvRow, outRow;  // leading dimensions of qkv and out
  int64_t qkvOffset, outOffset, probsOffset;
  HeadSlices(int b, int h, int seq, int heads, int headDim) {
    const int64_t hd = int64_t{heads} * headDim;
    qkvRow = 3 * hd;
    outRow = hd;
    qkvOffset = int64_t{b} * seq * qkvRow + int64_t{h} * headDim;
    outOffset = int64_t{b} * seq * outRow + int64_t{h} * headDim;
    probsOffset = (int64_t{b} * heads + h) * seq * seq;
  }
};

// cos/sin of Note [RoPE angles], seq x (headDim/2) each.
void ropeTables(int seq, int headDim, float base, std::vector<float>* cosines,
                std::vector<float>* sines) {
  const int half = headDim / 2;
  cosines->resize(static_cast<size_t>(seq) * half);
  sines->resize(cosines->size());
  for (int i = 0; i < half; ++i) {
    const double theta = std::pow(static_cast<double>(base), -2.0 * i / headDim);
    for (int pos = 0; pos < seq; ++pos) {
      const double angle = pos * theta;
      (*cosines)[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::cos(angle));
      (*sines)[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

// Turns the q and k pairs of every row by +angle (sign 1) or -angle (sign -1).
void ropeApply(float* qkv, int batch, int seq, int heads, int headDim, float base, float sign) {
  if (batch == 0 || seq == 0 || heads == 0 || headDim < 2) return;
  std::vector<float> cosines, sines;
  ropeTables(seq, headDim, base, &cosines, &sines);
  const int half = headDim / 2;
  const int64_t rowWidth = 3 * int64_t{heads} * headDim;
  for (int64_t r = 0; r < int64_t{batch} * seq; ++r) {
    const float* c = cosines.data() + (r % seq) * half;
    const float* s = sines.data() + (r % seq) * half;
    float* row = qkv + r * rowWidth;
    for (int h = 0; h < 2 * heads; ++h) {  // q heads, then k heads: contiguous
      float* x = row + int64_t{h} * headDim;
      for (int i = 0; i < half; ++i) {
        const float a = x[2 * i], b = x[2 * i + 1], sn = sign * s[i];
        x[2 * i] = a * c[i] - b * sn;
        x[2 * i + 1] = a * sn + b * c[i];
      }
    }
  }
}

void dropoutApply(const float* x, float* y, size_t n, float p, uint64_t seed) {
  if (p <= 0.f) {
    if (x != y && n) std::memmove(y, x, n * sizeof(float));
    return;
  }
  const float scale = dropoutScale(p);
  for (size_t i = 0; i < n; ++i) y[i] = dropoutUniform(seed, i) >= p ? x[i] * scale : 0.f;
}

}  // namespace

DDP_VECTOR_CLONES void embeddingForward(const int32_t* ids, int n, const float* table, int dim, float* out,
                      bool accumulate) {
  for (int i = 0; i < n; ++i) {
    const float* src = table + int64_t{ids[i]} * dim;
    float* dst = out + int64_t{i} * dim;
    if (accumulate) {
      for (int c = 0; c < dim; ++c) dst[c] += src[c];
    } else {
      std::memcpy(dst, src, sizeof(float) * dim);
    }
  }
}

DDP_VECTOR_CLONES void embeddingBackward(const int32_t* ids, int n, const float* dout, int dim, int vocab,
                       float* dtable, bool accumulate) {
  if (!accumulate) std::fill(dtable, dtable + int64_t{vocab} * dim, 0.f);
  for (int i = 0; i < n; ++i) {
    float* dst = dtable + int64_t{ids[i]} * dim;
    const float* src = dout + int64_t{i} * dim;
    for (int c = 0; c < dim; ++c) dst[c] += src[c];
  }
}

DDP_VECTOR_CLONES void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int dim,
                      float eps, float* y, float* mean, float* rstd) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t{r} * dim;
    float* yr = y + int64_t{r} * dim;
    const float mu = sum8(xr, dim) / static_cast<float>(dim);
    const float var = centeredSquares8(xr, mu, dim) / static_cast<float>(dim);
    const float rs = 1.f / std::sqrt(var + eps);
    for (int c = 0; c < dim; ++c) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

DDP_VECTOR_CLONES void layerNormBackward(const float* x, const float* gamma, const float* mean, const float* rstd,
                       const float* dy, int rows, int dim, float* dx, float* dgamma, float* dbeta,
                       bool accumulateParams) {
  if (!accumulateParams) {
    std::fill(dgamma, dgamma + dim, 0.f);
    std::fill(dbeta, dbeta + dim, 0.f);
  }
  const float invDim = 1.f / static_cast<float>(dim);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t{r} * dim;
    const float* dyr = dy + int64_t{r} * dim;
    float* dxr = dx + int64_t{r} * dim;
    const float mu = mean[r], rs = rstd[r];
    float sumG = 0.f, sumGx = 0.f;
    for (int c = 0; c < dim; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      const float g = dyr[c] * gamma[c];
      sumG += g;
      sumGx += g * xhat;
      dgamma[c] += dyr[c] * xhat;
      dbeta[c] += dyr[c];
    }
    const float a = sumG * invDim, b = sumGx * invDim;
    for (int c = 0; c < dim; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - a - xhat * b);
    }
  }
}

DDP_VECTOR_CLONES void rmsNormForward(const float* x, const float* gamma, int rows, int dim, float eps, float* y,
                    float* rstd) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t{r} * dim;
    float* yr = y + int64_t{r} * dim;
    const float rs = 1.f / std::sqrt(dot8(xr, xr, dim) / static_cast<float>(dim) + eps);
    for (int c = 0; c < dim; ++c) yr[c] = xr[c] * rs * gamma[c];
    rstd[r] = rs;
  }
}

DDP_VECTOR_CLONES void rmsNormBackward(const float* x, const float* gamma, const float* rstd, const float* dy,
                     int rows, int dim, float* dx, float* dgamma, bool accumulateParams) {
  if (!accumulateParams) std::fill(dgamma, dgamma + dim, 0.f);
  const float invDim = 1.f / static_cast<float>(dim);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t{r} * dim;
    const float* dyr = dy + int64_t{r} * dim;
    float* dxr = dx + int64_t{r} * dim;
    const float rs = rstd[r];
    float sumGx = 0.f;
    for (int c = 0; c < dim; ++c) {
      sumGx += dyr[c] * gamma[c] * xr[c];
      dgamma[c] += dyr[c] * xr[c] * rs;
    }
    const float k = rs * rs * sumGx * invDim;
    for (int c = 0; c < dim; ++c) dxr[c] = rs * (dyr[c] * gamma[c] - xr[c] * k);
  }
}

DDP_VECTOR_CLONES void causalAttentionForward(const float* qkv, int batch, int seq, int heads, int headDim,
                            float* out, float* probs) {
  if (batch == 0 || seq == 0 || heads == 0 || headDim == 0) return;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  const int64_t hd = int64_t{heads} * headDim;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const HeadSlices s(b, h, seq, heads, headDim);
      const float* q = qkv + s.qkvOffset;
      const float* k = q + hd;
      const float* v = q + 2 * hd;
      float* o = out + s.outOffset;
      float* p = probs + s.probsOffset;
      const int ld = static_cast<int>(s.qkvRow);
      for (int i0 = 0; i0 < seq; i0 += kAttentionRowBlock) {
        const int i1 = std::min(seq, i0 + kAttentionRowBlock), m = i1 - i0;
        float* pb = p + int64_t{i0} * seq;
        // S[i0:i1, 0:i1] = scale Q[i0:i1] K[0:i1]^T, softmax over j <= i, then O = P V.
        gemmStrided(false, true, m, i1, headDim, scale, q + int64_t{i0} * ld, ld, k, ld, 0.f,
                    pb, seq);
        for (int i = i0; i < i1; ++i) causalSoftmaxRow(pb + int64_t{i - i0} * seq, i + 1, seq);
        gemmStrided(false, false, m, headDim, i1, 1.f, pb, seq, v, ld, 0.f,
                    o + int64_t{i0} * s.outRow, static_cast<int>(s.outRow));
      }
    }
  }
}

DDP_VECTOR_CLONES void causalAttentionBackward(const float* qkv, const float* probs, const float* dout, int batch,
                             int seq, int heads, int headDim, float* dqkv) {
  if (batch == 0 || seq == 0 || heads == 0 || headDim == 0) return;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  const int64_t hd = int64_t{heads} * headDim;
  // dK and dV are sums over row blocks: zero them (dQ is written block by block).
  for (int64_t r = 0; r < int64_t{batch} * seq; ++r) {
    std::fill(dqkv + r * 3 * hd + hd, dqkv + (r + 1) * 3 * hd, 0.f);
  }
  std::vector<float> ds(static_cast<size_t>(std::min(seq, kAttentionRowBlock)) * seq);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const HeadSlices s(b, h, seq, heads, headDim);
      const float* q = qkv + s.qkvOffset;
      const float* k = q + hd;
      const float* v = q + 2 * hd;
      float* dq = dqkv + s.qkvOffset;
      float* dk = dq + hd;
      float* dv = dq + 2 * hd;
      const float* p = probs + s.probsOffset;
      const float* dO = dout + s.outOffset;
      const int ld = static_cast<int>(s.qkvRow), ldo = static_cast<int>(s.outRow);
      for (int i0 = 0; i0 < seq; i0 += kAttentionRowBlock) {
        const int i1 = std::min(seq, i0 + kAttentionRowBlock), m = i1 - i0;
        const float* pb = p + int64_t{i0} * seq;
        const float* dOb = dO + int64_t{i0} * ldo;
        // dV[0:i1] += P[i0:i1, 0:i1]^T dO[i0:i1]
        gemmStrided(true, false, i1, headDim, m, 1.f, pb, seq, dOb, ldo, 1.f, dv, ld);
        // dP = dO[i0:i1] V[0:i1]^T, then dS = P (dP - <P, dP>) row by row.
        gemmStrided(false, true, m, i1, headDim, 1.f, dOb, ldo, v, ld, 0.f, ds.data(), seq);
        for (int i = i0; i < i1; ++i) {
          causalSoftmaxBackwardRow(pb + int64_t{i - i0} * seq, ds.data() + int64_t{i - i0} * seq,
                                   i + 1, i1);
        }
        // dQ[i0:i1] = scale dS K[0:i1];  dK[0:i1] += scale dS^T Q[i0:i1]
        gemmStrided(false, false, m, headDim, i1, scale, ds.data(), seq, k, ld, 0.f,
                    dq + int64_t{i0} * ld, ld);
        gemmStrided(true, false, i1, headDim, m, scale, ds.data(), seq, q + int64_t{i0} * ld, ld,
                    1.f, dk, ld);
      }
    }
  }
}

void ropeForward(float* qkv, int batch, int seq, int heads, int headDim, float base) {
  ropeApply(qkv, batch, seq, heads, headDim, base, 1.f);
}

void ropeBackward(float* dqkv, int batch, int seq, int heads, int headDim, float base) {
  ropeApply(dqkv, batch, seq, heads, headDim, base, -1.f);
}

DDP_VECTOR_CLONES void addInPlace(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

DDP_VECTOR_CLONES void crossEntropyInPlace(float* logits, const int32_t* labels, int rows, int classes, float scale,
                         float* rowLoss, int32_t* rowCorrect) {
  for (int r = 0; r < rows; ++r) {
    float* z = logits + int64_t{r} * classes;
    const int32_t label = labels[r];
    if (label < 0 || classes == 0) {
      std::fill(z, z + classes, 0.f);
      rowLoss[r] = 0.f;
      rowCorrect[r] = 0;
      continue;
    }
    const float mx = max8(z, classes);
    int arg = -1;  // the first maximum (stays -1 only for NaN rows)
    for (int c = 0; c < classes; ++c) {
      if (z[c] == mx) {
        arg = c;
        break;
      }
    }
    const float zLabel = z[label];
    for (int c = 0; c < classes; ++c) z[c] = expApprox(z[c] - mx);
    const float sum = sum8(z, classes);
    rowLoss[r] = (mx - zLabel) + std::log(sum);
    rowCorrect[r] = arg == label ? 1 : 0;
    const float f = scale / sum;
    for (int c = 0; c < classes; ++c) z[c] *= f;
    z[label] -= scale;
  }
}

void dropoutForward(const float* x, float* y, size_t n, float p, uint64_t seed) {
  dropoutApply(x, y, n, p, seed);
}

void dropoutBackward(const float* dy, float* dx, size_t n, float p, uint64_t seed) {
  dropoutApply(dy, dx, n, p, seed);
}

}  // namespace ddp::kernels::cpu
