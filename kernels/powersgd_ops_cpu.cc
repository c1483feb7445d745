#include "kernels/powersgd_ops_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DDP_POWERSGD_AVX2 1
#include <immintrin.h>
#else
#define DDP_POWERSGD_AVX2 0
#endif

namespace ddp::kernels::powersgd::cpu {
namespace {

// Q (cols x r, row-major) transposed into per-thread scratch: r contiguous rows of length cols.
// `slot` 0 or 1: two transposes alive at once (compensateAndComputeP needs Q and the last Q).
const float* transposed(const float* q, size_t cols, size_t r, int slot = 0) {
  thread_local std::vector<float> qt[2];
  std::vector<float>& buf = qt[slot];
  if (buf.size() < r * cols) buf.resize(r * cols);
  transposeQ(q, cols, r, buf.data());
  return buf.data();
}

// Row i of M~ = P Q^T into a[0..cols) (portable loops). decompressScalar and compensateScalar
// both use it, so the deferred error equals the eager one bit for bit (Note [Deferred error
// feedback] in powersgd_ops.h).
void approxRowScalar(const float* pi, const float* qt, size_t cols, size_t r, float* __restrict a) {
  std::fill(a, a + cols, 0.0f);
  for (size_t k = 0; k < r; ++k) {
    const float pk = pi[k];
    const float* qk = qt + k * cols;
    for (size_t j = 0; j < cols; ++j) a[j] += pk * qk[j];
  }
}

// ---- Portable versions (the compiler vectorises the loops without reductions). ----

void pRowsScalar(float* m, const float* error, const float* qt, float* p, size_t rows, size_t cols, size_t r) {
  for (size_t i = 0; i < rows; ++i) {
    float* mi = m + i * cols;
    if (error != nullptr) {
      const float* ei = error + i * cols;
      for (size_t j = 0; j < cols; ++j) mi[j] += ei[j];
    }
    for (size_t k = 0; k < r; ++k) {
      const float* qk = qt + k * cols;
      float s = 0.0f;
      for (size_t j = 0; j < cols; ++j) s += mi[j] * qk[j];
      p[i * r + k] = s;
    }
  }
}

void qRowsScalar(const float* m, const float* p, float* qt, size_t rows, size_t cols, size_t r) {
  for (size_t i = 0; i < rows; ++i) {
    const float* mi = m + i * cols;
    for (size_t k = 0; k < r; ++k) {
      const float pk = p[i * r + k];
      float* __restrict qk = qt + k * cols;
      for (size_t j = 0; j < cols; ++j) qk[j] += pk * mi[j];
    }
  }
}

void decompressScalar(float* m, const float* p, const float* qt, float* error, size_t rows, size_t cols,
                      size_t r) {
  thread_local std::vector<float> row;
  if (row.size() < cols) row.resize(cols);
  float* __restrict a = row.data();
  for (size_t i = 0; i < rows; ++i) {
    approxRowScalar(p + i * r, qt, cols, r, a);
    float* mi = m + i * cols;
    if (error != nullptr) {
      float* ei = error + i * cols;
      for (size_t j = 0; j < cols; ++j) ei[j] = mi[j] - a[j];
    }
    std::copy(a, a + cols, mi);
  }
}

void compensateScalar(const float* grad, float* sum, const float* prevP, const float* prevQt, const float* qt,
                      float* p, size_t rows, size_t cols, size_t r) {
  thread_local std::vector<float> row;
  if (row.size() < cols) row.resize(cols);
  float* __restrict a = row.data();
  for (size_t i = 0; i < rows; ++i) {
    const float* gi = grad + i * cols;
    float* si = sum + i * cols;
    if (prevP != nullptr) {
      approxRowScalar(prevP + i * r, prevQt, cols, r, a);
      for (size_t j = 0; j < cols; ++j) si[j] = gi[j] + (si[j] - a[j]);
    } else {
      for (size_t j = 0; j < cols; ++j) si[j] = gi[j] + si[j];
    }
    pRowsScalar(si, nullptr, qt, p + i * r, 1, cols, r);
  }
}

#if DDP_POWERSGD_AVX2

#define DDP_AVX2 __attribute__((target("avx2,fma")))
#define DDP_AVX2_LAMBDA __attribute__((target("avx2,fma")))

DDP_AVX2 inline float horizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Note [Row pairs]
// At r = 4, Q^T (32 KiB for 2048 columns) does not stay in L1 next to the streams of M and the
// error, so each of its loads is an L2 access. Two rows of M share each load of Q^T in the P
// and M~ kernels, halving that traffic (the P pass got about 25 % faster at r = 4).

// out_x[0..KC) = row_x . qt[k] for rows x = 0 .. NR-1 (NR = 1 or 2) and KC rows of Q^T; with
// kAdd, each row += its error row first (stored back).
template <int NR, int KC, bool kAdd>
DDP_AVX2 inline void pRowsKernel(float* const* mi, const float* const* ei, const float* qt, size_t cols,
                                 float* const* out) {
  __m256 acc[NR][KC];
  for (int x = 0; x < NR; ++x)
    for (int k = 0; k < KC; ++k) acc[x][k] = _mm256_setzero_ps();
  size_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 v[NR];
    for (int x = 0; x < NR; ++x) {
      v[x] = _mm256_loadu_ps(mi[x] + j);
      if constexpr (kAdd) {
        v[x] = _mm256_add_ps(v[x], _mm256_loadu_ps(ei[x] + j));
        _mm256_storeu_ps(mi[x] + j, v[x]);
      }
    }
    for (int k = 0; k < KC; ++k) {
      const __m256 q = _mm256_loadu_ps(qt + k * cols + j);
      for (int x = 0; x < NR; ++x) acc[x][k] = _mm256_fmadd_ps(v[x], q, acc[x][k]);
    }
  }
  for (int x = 0; x < NR; ++x) {
    float s[KC];
    for (int k = 0; k < KC; ++k) s[k] = horizontalSum(acc[x][k]);
    for (size_t t = j; t < cols; ++t) {
      float v = mi[x][t];
      if constexpr (kAdd) {
        v += ei[x][t];
        mi[x][t] = v;
      }
      for (int k = 0; k < KC; ++k) s[k] += v * qt[k * cols + t];
    }
    for (int k = 0; k < KC; ++k) out[x][k] = s[k];
  }
}

template <int NR, bool kAdd>
DDP_AVX2 void pGroup(size_t kc, float* const* mi, const float* const* ei, const float* qt, size_t cols,
                     float* const* out) {
  switch (kc) {
    case 1: return pRowsKernel<NR, 1, kAdd>(mi, ei, qt, cols, out);
    case 2: return pRowsKernel<NR, 2, kAdd>(mi, ei, qt, cols, out);
    case 3: return pRowsKernel<NR, 3, kAdd>(mi, ei, qt, cols, out);
    default: return pRowsKernel<NR, 4, kAdd>(mi, ei, qt, cols, out);
  }
}

template <int NR>
DDP_AVX2 void pRowsOf(float* m, const float* error, const float* qt, float* p, size_t i, size_t cols, size_t r) {
  for (size_t k0 = 0; k0 < r; k0 += 4) {
    const size_t kc = std::min<size_t>(4, r - k0);
    float* mi[NR];
    const float* ei[NR];
    float* out[NR];
    for (int x = 0; x < NR; ++x) {
      mi[x] = m + (i + x) * cols;
      ei[x] = error != nullptr ? error + (i + x) * cols : nullptr;
      out[x] = p + (i + x) * r + k0;
    }
    if (error != nullptr && k0 == 0) pGroup<NR, true>(kc, mi, ei, qt, cols, out);
    else pGroup<NR, false>(kc, mi, ei, qt + k0 * cols, cols, out);
  }
}

DDP_AVX2 void pRowsAvx2(float* m, const float* error, const float* qt, float* p, size_t rows, size_t cols, size_t r) {
  size_t i = 0;
  for (; i + 2 <= rows; i += 2) pRowsOf<2>(m, error, qt, p, i, cols, r);  // Note [Row pairs]
  for (; i < rows; ++i) pRowsOf<1>(m, error, qt, p, i, cols, r);
}

// Q^T[k] += sum over eight rows (then four, then one) of p[i][k] * row i, rows in ascending order
// per element (eight rows per load and store of Q^T: 15 % less time than four at r = 4). R > 0
// is r known at compile time (loops unrolled), R == 0 reads it from `rank`.
template <int R>
DDP_AVX2 void qRowsAvx2(const float* m, const float* p, float* qt, size_t rows, size_t cols, size_t rank) {
  const size_t r = R > 0 ? static_cast<size_t>(R) : rank;
  size_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    const float* m0 = m + i * cols;
    const float* pi = p + i * r;
    size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 v[8];
      for (int x = 0; x < 8; ++x) v[x] = _mm256_loadu_ps(m0 + x * cols + j);
      for (size_t k = 0; k < r; ++k) {
        float* qk = qt + k * cols + j;
        __m256 a = _mm256_loadu_ps(qk);
        for (int x = 0; x < 8; ++x) a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + x * r + k), v[x], a);
        _mm256_storeu_ps(qk, a);
      }
    }
    for (; j < cols; ++j) {
      for (size_t k = 0; k < r; ++k) {
        float a = qt[k * cols + j];
        for (int x = 0; x < 8; ++x) a += pi[x * r + k] * m0[x * cols + j];
        qt[k * cols + j] = a;
      }
    }
  }
  for (; i + 4 <= rows; i += 4) {
    const float* m0 = m + i * cols;
    const float* m1 = m0 + cols;
    const float* m2 = m1 + cols;
    const float* m3 = m2 + cols;
    const float* pi = p + i * r;
    size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      const __m256 v0 = _mm256_loadu_ps(m0 + j), v1 = _mm256_loadu_ps(m1 + j);
      const __m256 v2 = _mm256_loadu_ps(m2 + j), v3 = _mm256_loadu_ps(m3 + j);
      for (size_t k = 0; k < r; ++k) {
        float* qk = qt + k * cols + j;
        __m256 a = _mm256_loadu_ps(qk);
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + k), v0, a);
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + r + k), v1, a);
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + 2 * r + k), v2, a);
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + 3 * r + k), v3, a);
        _mm256_storeu_ps(qk, a);
      }
    }
    for (; j < cols; ++j) {
      for (size_t k = 0; k < r; ++k) {
        float a = qt[k * cols + j];
        a += pi[k] * m0[j];
        a += pi[r + k] * m1[j];
        a += pi[2 * r + k] * m2[j];
        a += pi[3 * r + k] * m3[j];
        qt[k * cols + j] = a;
      }
    }
  }
  for (; i < rows; ++i) {
    const float* mi = m + i * cols;
    for (size_t k = 0; k < r; ++k) {
      const __m256 pk = _mm256_set1_ps(p[i * r + k]);
      float* qk = qt + k * cols;
      size_t j = 0;
      for (; j + 8 <= cols; j += 8) {
        _mm256_storeu_ps(qk + j, _mm256_fmadd_ps(pk, _mm256_loadu_ps(mi + j), _mm256_loadu_ps(qk + j)));
      }
      for (; j < cols; ++j) qk[j] += p[i * r + k] * mi[j];
    }
  }
}

// One element of M~ (the vector loop's order: a = fma(p_k, qt_k, a) from a = 0).
DDP_AVX2 inline float approxAt(const float* pi, const float* qt, size_t cols, size_t r, size_t j) {
  float a = 0.0f;
  for (size_t k = 0; k < r; ++k) a = std::fma(pi[k], qt[k * cols + j], a);
  return a;
}

// sum[j] = grad[j] + sum[j] for j < n.
DDP_AVX2 inline void addRowsAvx2(const float* grad, float* sum, size_t n) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(sum + j, _mm256_add_ps(_mm256_loadu_ps(grad + j), _mm256_loadu_ps(sum + j)));
  for (; j < n; ++j) sum[j] = grad[j] + sum[j];
}

// Note [Streaming the error out]
// The new error is only read back at the next step, after the whole 58 MB of gradients went
// through the cache: an ordinary store would first read each of its cache lines (a read for
// ownership) only to overwrite them. Non-temporal stores write the error without that read,
// saving one of the step's passes over memory; they need 32-byte alignment, so each row starts
// with a few scalar elements, and end with a store fence. When only M~ is written (no error, or
// the error deferred: Note [Deferred error feedback] in powersgd_ops.h), M~ itself is streamed:
// M is not read at all then.
// Two rows of decompressAvx2<R> (R in 1..4) sharing each load of Q^T (Note [Row pairs]). The
// caller guarantees cols % 8 == 0, so both error rows have the same alignment.
template <int R>
DDP_AVX2 void decompressPairAvx2(float* m, const float* p, const float* qt, float* error, size_t i, size_t cols,
                                  bool streamError) {
  float* m0 = m + i * cols;
  float* m1 = m0 + cols;
  const float* p0 = p + i * R;
  const float* p1 = p0 + R;
  float* e0 = error != nullptr ? error + i * cols : nullptr;
  float* e1 = error != nullptr ? e0 + cols : nullptr;
  __m256 pk0[R], pk1[R];
  for (int k = 0; k < R; ++k) {
    pk0[k] = _mm256_broadcast_ss(p0 + k);
    pk1[k] = _mm256_broadcast_ss(p1 + k);
  }
  // The streamed rows (the error's, or M's when only M~ is written) start aligned after a head.
  const float* streamed = e0 != nullptr ? e0 : m0;
  const size_t misaligned = (reinterpret_cast<uintptr_t>(streamed) % 32) / sizeof(float);
  const size_t head = std::min(cols, misaligned == 0 ? size_t{0} : 8 - misaligned);
  auto scalarAt = [&](size_t j) DDP_AVX2_LAMBDA {  // the head and the tail
    const float a0 = approxAt(p0, qt, cols, R, j), a1 = approxAt(p1, qt, cols, R, j);
    if (e0 != nullptr) {
      e0[j] = m0[j] - a0;
      e1[j] = m1[j] - a1;
    }
    m0[j] = a0;
    m1[j] = a1;
  };
  size_t j = 0;
  for (; j < head; ++j) scalarAt(j);
  for (; j + 8 <= cols; j += 8) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int k = 0; k < R; ++k) {
      const __m256 q = _mm256_loadu_ps(qt + k * cols + j);
      a0 = _mm256_fmadd_ps(pk0[k], q, a0);
      a1 = _mm256_fmadd_ps(pk1[k], q, a1);
    }
    if (e0 != nullptr) {
      const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(m0 + j), a0), d1 = _mm256_sub_ps(_mm256_loadu_ps(m1 + j), a1);
      if (streamError) {
        _mm256_stream_ps(e0 + j, d0);
        _mm256_stream_ps(e1 + j, d1);
      } else {
        _mm256_storeu_ps(e0 + j, d0);
        _mm256_storeu_ps(e1 + j, d1);
      }
      _mm256_storeu_ps(m0 + j, a0);
      _mm256_storeu_ps(m1 + j, a1);
    } else {
      _mm256_stream_ps(m0 + j, a0);
      _mm256_stream_ps(m1 + j, a1);
    }
  }
  for (; j < cols; ++j) scalarAt(j);
}

template <int R>
DDP_AVX2 void decompressAvx2(float* m, const float* p, const float* qt, float* error, size_t rows, size_t cols,
                             size_t rank, bool streamError) {
  const size_t r = R > 0 ? static_cast<size_t>(R) : rank;
  constexpr int kHoisted = R > 0 ? R : 1;
  size_t i = 0;
  if constexpr (R >= 1 && R <= 4) {
    const bool aligned = reinterpret_cast<uintptr_t>(error) % sizeof(float) == 0;
    if (cols % 8 == 0 && aligned) {
      for (; i + 2 <= rows; i += 2) decompressPairAvx2<R>(m, p, qt, error, i, cols, streamError);  // Note [Row pairs]
    }
  }
  for (; i < rows; ++i) {
    const float* pi = p + i * r;
    float* mi = m + i * cols;
    float* ei = error != nullptr ? error + i * cols : nullptr;
    __m256 pk[kHoisted];  // the row's p values, broadcast once per row (R > 0)
    if constexpr (R > 0)
      for (int k = 0; k < R; ++k) pk[k] = _mm256_broadcast_ss(pi + k);
    auto approx = [&](size_t j) DDP_AVX2_LAMBDA {
      __m256 a = _mm256_setzero_ps();
      if constexpr (R > 0) {
        for (int k = 0; k < R; ++k) a = _mm256_fmadd_ps(pk[k], _mm256_loadu_ps(qt + k * cols + j), a);
      } else {
        for (size_t k = 0; k < r; ++k) a = _mm256_fmadd_ps(_mm256_broadcast_ss(pi + k), _mm256_loadu_ps(qt + k * cols + j), a);
      }
      return a;
    };
    size_t j = 0;
    if (ei != nullptr) {
      const size_t misaligned = (reinterpret_cast<uintptr_t>(ei) % 32) / sizeof(float);
      const size_t head = reinterpret_cast<uintptr_t>(ei) % sizeof(float) != 0
                              ? cols  // not even float-aligned: all scalar
                              : std::min(cols, misaligned == 0 ? size_t{0} : 8 - misaligned);
      for (; j < head; ++j) {
        const float a = approxAt(pi, qt, cols, r, j);
        ei[j] = mi[j] - a;
        mi[j] = a;
      }
      for (; j + 8 <= cols; j += 8) {
        const __m256 a = approx(j);
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(mi + j), a);
        if (streamError) _mm256_stream_ps(ei + j, d);
        else _mm256_storeu_ps(ei + j, d);
        _mm256_storeu_ps(mi + j, a);
      }
    } else {
      const size_t misaligned = (reinterpret_cast<uintptr_t>(mi) % 32) / sizeof(float);
      const size_t head = std::min(cols, misaligned == 0 ? size_t{0} : 8 - misaligned);
      for (; j < head; ++j) mi[j] = approxAt(pi, qt, cols, r, j);
      for (; j + 8 <= cols; j += 8) _mm256_stream_ps(mi + j, approx(j));
    }
    for (; j < cols; ++j) {
      const float a = approxAt(pi, qt, cols, r, j);
      if (ei != nullptr) ei[j] = mi[j] - a;
      mi[j] = a;
    }
  }
  _mm_sfence();  // Note [Streaming the error out]
}

// NR rows (1 or 2, Note [Row pairs]) from row i of the compensation in
// compensateAndComputeP: sum = grad + (sum - prevP prevQ^T), the product evaluated as in
// decompressAvx2 (approxAt's order). R > 0 is the rank at compile time, R == 0 reads `rank`.
template <int R, int NR>
DDP_AVX2 void compensateRowsAvx2(const float* grad, float* sum, const float* prevP, const float* prevQt, size_t i,
                                 size_t cols, size_t rank) {
  const size_t r = R > 0 ? static_cast<size_t>(R) : rank;
  constexpr int kHoisted = R > 0 ? R : 1;
  const float* g[NR];
  float* s[NR];
  const float* pp[NR];
  __m256 pk[NR][kHoisted];
  for (int x = 0; x < NR; ++x) {
    g[x] = grad + (i + x) * cols;
    s[x] = sum + (i + x) * cols;
    pp[x] = prevP + (i + x) * r;
    if constexpr (R > 0)
      for (int k = 0; k < R; ++k) pk[x][k] = _mm256_broadcast_ss(pp[x] + k);
  }
  size_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 a[NR];
    for (int x = 0; x < NR; ++x) a[x] = _mm256_setzero_ps();
    for (size_t k = 0; k < r; ++k) {
      const __m256 q = _mm256_loadu_ps(prevQt + k * cols + j);
      for (int x = 0; x < NR; ++x) {
        __m256 pkx;
        if constexpr (R > 0) pkx = pk[x][k];
        else pkx = _mm256_broadcast_ss(pp[x] + k);
        a[x] = _mm256_fmadd_ps(pkx, q, a[x]);
      }
    }
    for (int x = 0; x < NR; ++x) {
      const __m256 e = _mm256_sub_ps(_mm256_loadu_ps(s[x] + j), a[x]);
      _mm256_storeu_ps(s[x] + j, _mm256_add_ps(_mm256_loadu_ps(g[x] + j), e));
    }
  }
  for (; j < cols; ++j) {
    for (int x = 0; x < NR; ++x) s[x][j] = g[x][j] + (s[x][j] - approxAt(pp[x], prevQt, cols, r, j));
  }
}

template <int R>
DDP_AVX2 void compensateAvx2(const float* grad, float* sum, const float* prevP, const float* prevQt,
                             const float* qt, float* p, size_t rows, size_t cols, size_t rank) {
  size_t i = 0;
  for (; i + 2 <= rows; i += 2) {  // Note [Row pairs]; the pair is still in L1 for P
    if (prevP != nullptr) compensateRowsAvx2<R, 2>(grad, sum, prevP, prevQt, i, cols, rank);
    else addRowsAvx2(grad + i * cols, sum + i * cols, 2 * cols);
    pRowsOf<2>(sum, nullptr, qt, p, i, cols, rank);
  }
  for (; i < rows; ++i) {
    if (prevP != nullptr) compensateRowsAvx2<R, 1>(grad, sum, prevP, prevQt, i, cols, rank);
    else addRowsAvx2(grad + i * cols, sum + i * cols, cols);
    pRowsOf<1>(sum, nullptr, qt, p, i, cols, rank);
  }
}

// Picks the kernel instance for r (unrolled for the usual ranks 1..8).
#define DDP_POWERSGD_BY_RANK(kernel, r, ...)  \
  switch (r) {                                \
    case 1: return kernel<1>(__VA_ARGS__);    \
    case 2: return kernel<2>(__VA_ARGS__);    \
    case 3: return kernel<3>(__VA_ARGS__);    \
    case 4: return kernel<4>(__VA_ARGS__);    \
    case 8: return kernel<8>(__VA_ARGS__);    \
    default: return kernel<0>(__VA_ARGS__);   \
  }

DDP_AVX2 void qRowsAvx2ByRank(const float* m, const float* p, float* qt, size_t rows, size_t cols, size_t r) {
  DDP_POWERSGD_BY_RANK(qRowsAvx2, r, m, p, qt, rows, cols, r)
}

DDP_AVX2 void decompressAvx2ByRank(float* m, const float* p, const float* qt, float* error, size_t rows,
                                   size_t cols, size_t r, bool streamError) {
  DDP_POWERSGD_BY_RANK(decompressAvx2, r, m, p, qt, error, rows, cols, r, streamError)
}

DDP_AVX2 void compensateAvx2ByRank(const float* grad, float* sum, const float* prevP, const float* prevQt,
                                   const float* qt, float* p, size_t rows, size_t cols, size_t r) {
  DDP_POWERSGD_BY_RANK(compensateAvx2, r, grad, sum, prevP, prevQt, qt, p, rows, cols, r)
}

DDP_AVX2 void streamCopyAvx2(float* dst, const float* src, size_t n) {
  const size_t misaligned = (reinterpret_cast<uintptr_t>(dst) % 32) / sizeof(float);
  const size_t head = reinterpret_cast<uintptr_t>(dst) % sizeof(float) != 0
                          ? n  // not even float-aligned: all scalar
                          : std::min(n, misaligned == 0 ? size_t{0} : 8 - misaligned);
  size_t j = 0;
  for (; j < head; ++j) dst[j] = src[j];
  for (; j + 8 <= n; j += 8) _mm256_stream_ps(dst + j, _mm256_loadu_ps(src + j));
  for (; j < n; ++j) dst[j] = src[j];
  _mm_sfence();
}

bool haveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

#else

bool haveAvx2() { return false; }

#endif  // DDP_POWERSGD_AVX2

}  // namespace

void streamCopy(float* dst, const float* src, size_t n) {
#if DDP_POWERSGD_AVX2
  if (haveAvx2()) return streamCopyAvx2(dst, src, n);
#endif
  std::copy(src, src + n, dst);
}

void transposeQ(const float* q, size_t cols, size_t r, float* qt) {
  for (size_t j = 0; j < cols; ++j)
    for (size_t k = 0; k < r; ++k) qt[k * cols + j] = q[j * r + k];
}

void addErrorAndComputePTransposed(float* m, const float* error, const float* qt, float* p, size_t rows,
                                   size_t cols, size_t r) {
  if (rows == 0 || r == 0) {
    if (error != nullptr)
      for (size_t i = 0; i < rows * cols; ++i) m[i] += error[i];
    return;
  }
#if DDP_POWERSGD_AVX2
  if (haveAvx2()) return pRowsAvx2(m, error, qt, p, rows, cols, r);
#endif
  pRowsScalar(m, error, qt, p, rows, cols, r);
}

void addErrorAndComputeP(float* m, const float* error, const float* q, float* p, size_t rows, size_t cols,
                         size_t r) {
  const bool empty = rows == 0 || r == 0;  // then Q is not read
  addErrorAndComputePTransposed(m, error, empty ? nullptr : transposed(q, cols, r), p, rows, cols, r);
}

void compensateAndComputePTransposed(const float* grad, float* sum, const float* prevP, const float* prevQt,
                                     const float* qt, float* p, size_t rows, size_t cols, size_t r) {
  if (rows == 0 || cols == 0) return;
  if (r == 0) {  // nothing sent, nothing to subtract; P is empty
    for (size_t i = 0; i < rows * cols; ++i) sum[i] = grad[i] + sum[i];
    return;
  }
#if DDP_POWERSGD_AVX2
  if (haveAvx2()) return compensateAvx2ByRank(grad, sum, prevP, prevQt, qt, p, rows, cols, r);
#endif
  compensateScalar(grad, sum, prevP, prevQt, qt, p, rows, cols, r);
}

void compensateAndComputeP(const float* grad, float* sum, const float* prevP, const float* prevQ, const float* q,
                           float* p, size_t rows, size_t cols, size_t r) {
  if (rows == 0 || cols == 0 || r == 0) return compensateAndComputePTransposed(grad, sum, nullptr, nullptr, nullptr, p, rows, cols, r);
  const float* prevQt = prevP != nullptr ? transposed(prevQ, cols, r, 1) : nullptr;
  compensateAndComputePTransposed(grad, sum, prevP, prevQt, transposed(q, cols, r, 0), p, rows, cols, r);
}

void computeQ(const float* m, const float* p, float* q, size_t rows, size_t cols, size_t r) {
  if (cols == 0 || r == 0) return;
  thread_local std::vector<float> scratch;
  if (scratch.size() < r * cols) scratch.resize(r * cols);
  float* qt = scratch.data();
  std::fill(qt, qt + r * cols, 0.0f);
#if DDP_POWERSGD_AVX2
  if (haveAvx2()) qRowsAvx2ByRank(m, p, qt, rows, cols, r);
  else qRowsScalar(m, p, qt, rows, cols, r);
#else
  qRowsScalar(m, p, qt, rows, cols, r);
#endif
  for (size_t j = 0; j < cols; ++j)
    for (size_t k = 0; k < r; ++k) q[j * r + k] = qt[k * cols + j];
}

void decompressTransposed(float* m, const float* p, const float* qt, float* error, size_t rows, size_t cols,
                          size_t r, bool streamError) {
  if (rows == 0 || cols == 0) return;
#if DDP_POWERSGD_AVX2
  if (haveAvx2()) return decompressAvx2ByRank(m, p, qt, error, rows, cols, r, streamError);
#else
  (void)streamError;
#endif
  decompressScalar(m, p, qt, error, rows, cols, r);
}

void decompress(float* m, const float* p, const float* q, float* error, size_t rows, size_t cols, size_t r) {
  if (rows == 0 || cols == 0) return;
  decompressTransposed(m, p, transposed(q, cols, r), error, rows, cols, r);
}

}  // namespace ddp::kernels::powersgd::cpu
