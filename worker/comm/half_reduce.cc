#include "worker/comm/half_reduce.h"

#include <immintrin.h>

#include <cstring>

#include "common/dtype.h"

namespace ddp::comm {
namespace {

// Note [Half reductions]
// Each element is widened to f32, combined in f32 and rounded back once (round to nearest
// even), so a ring of n ranks rounds n - 1 times, like NCCL's half reductions. The vector
// path (8 lanes, F16C for f16, integer shifts for bf16) computes exactly the same values as
// the scalar path: the same IEEE f32 operation followed by the same rounding.

enum class Kind { kSum, kProd, kMin, kMax };

inline float combine(Kind k, float a, float b) {
  switch (k) {
    case Kind::kSum: return a + b;
    case Kind::kProd: return a * b;
    case Kind::kMin: return a < b ? a : b;
    case Kind::kMax: return a > b ? a : b;
  }
  return a;
}

template <Kind K>
void f16Scalar(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = floatToHalf(combine(K, halfToFloat(x[i]), halfToFloat(y[i])));
}

template <Kind K>
void bf16Scalar(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = floatToBf16(combine(K, bf16ToFloat(x[i]), bf16ToFloat(y[i])));
}

template <Kind K>
__attribute__((target("f16c,avx2"))) inline __m256 combine8(__m256 a, __m256 b) {
  if constexpr (K == Kind::kSum) return _mm256_add_ps(a, b);
  if constexpr (K == Kind::kProd) return _mm256_mul_ps(a, b);
  // min_ps/max_ps return the second operand when either is NaN or both are equal, which is
  // exactly `a < b ? a : b` / `a > b ? a : b` of the scalar path.
  if constexpr (K == Kind::kMin) return _mm256_min_ps(a, b);
  return _mm256_max_ps(a, b);
}

template <Kind K>
__attribute__((target("f16c,avx2"))) void f16Vector(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256 y0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    __m256 x1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 8)));
    __m256 y1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i + 8)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                     _mm256_cvtps_ph(combine8<K>(x0, y0), _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i + 8),
                     _mm256_cvtps_ph(combine8<K>(x1, y1), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i + 8 <= n; i += 8) {
    __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256 y0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                     _mm256_cvtps_ph(combine8<K>(x0, y0), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) f16Scalar<K>(o + i, x + i, y + i, n - i);
}

__attribute__((target("f16c,avx2"))) inline __m256 bf16Load8(const uint16_t* p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// Rounds 8 floats to bf16 (nearest even; NaN stays a quiet NaN) in the low 16 bits of each lane.
__attribute__((target("f16c,avx2"))) inline __m256i bf16Round8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i isNan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, isNan);
}

template <Kind K>
__attribute__((target("f16c,avx2"))) void bf16Vector(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i r0 = bf16Round8(combine8<K>(bf16Load8(x + i), bf16Load8(y + i)));
    __m256i r1 = bf16Round8(combine8<K>(bf16Load8(x + i + 8), bf16Load8(y + i + 8)));
    // packus interleaves 128-bit lanes: [r0 lo, r1 lo, r0 hi, r1 hi]; permute restores order.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), packed);
  }
  if (i < n) bf16Scalar<K>(o + i, x + i, y + i, n - i);
}

bool cpuHasF16cAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  }();
  return has;
}

Kind kindOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return Kind::kSum;
    case ReduceOp::kProduct: return Kind::kProd;
    case ReduceOp::kMin: return Kind::kMin;
    case ReduceOp::kMax: return Kind::kMax;
  }
  return Kind::kSum;
}

template <template <Kind> class Pick>
ReduceKernel pick(Kind k) {
  switch (k) {
    case Kind::kSum: return Pick<Kind::kSum>::fn;
    case Kind::kProd: return Pick<Kind::kProd>::fn;
    case Kind::kMin: return Pick<Kind::kMin>::fn;
    case Kind::kMax: return Pick<Kind::kMax>::fn;
  }
  return nullptr;
}

template <Kind K> struct F16S { static constexpr ReduceKernel fn = &f16Scalar<K>; };
template <Kind K> struct F16V { static constexpr ReduceKernel fn = &f16Vector<K>; };
template <Kind K> struct BF16S { static constexpr ReduceKernel fn = &bf16Scalar<K>; };
template <Kind K> struct BF16V { static constexpr ReduceKernel fn = &bf16Vector<K>; };

}  // namespace

ReduceKernel halfReduceKernelScalar(DType dtype, ReduceOp op) {
  if (dtype == DType::kF16) return pick<F16S>(kindOf(op));
  if (dtype == DType::kBF16) return pick<BF16S>(kindOf(op));
  return nullptr;
}

ReduceKernel halfReduceKernel(DType dtype, ReduceOp op) {
  if (!cpuHasF16cAvx2()) return halfReduceKernelScalar(dtype, op);
  if (dtype == DType::kF16) return pick<F16V>(kindOf(op));
  if (dtype == DType::kBF16) return pick<BF16V>(kindOf(op));
  return nullptr;
}

bool halfReduceVectorised() { return cpuHasF16cAvx2(); }

void halfDivide(DType dtype, void* data, size_t n, float divisor) {
  auto* p = static_cast<uint16_t*>(data);
  if (dtype == DType::kF16) {
    for (size_t i = 0; i < n; ++i) p[i] = floatToHalf(halfToFloat(p[i]) / divisor);
  } else if (dtype == DType::kBF16) {
    for (size_t i = 0; i < n; ++i) p[i] = floatToBf16(bf16ToFloat(p[i]) / divisor);
  }
}

}  // namespace ddp::comm
