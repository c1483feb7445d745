#include "kernels/cast_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cast_ops_internal.h"
#if DDP_WITH_CUDA
#include "kernels/cast_ops_cuda.h"
#endif

namespace ddp::kernels {
namespace {

bool hasF16c() {
  static const bool v = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  return v;
}

__attribute__((target("avx2,f16c"))) void floatToHalfF16c(const float* s, uint16_t* d, size_t n, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(s + i), sc);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) d[i] = floatToHalf(s[i] * scale);
}

__attribute__((target("avx2,f16c"))) void halfToFloatF16c(const uint16_t* s, float* d, size_t n, float scale) {
  const __m256 sc = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_ps(d + i, _mm256_mul_ps(v, sc));
  }
  for (; i < n; ++i) d[i] = halfToFloat(s[i]) * scale;
}

// Branch-free twin of ddp::floatToBf16 so the loop vectorises.
inline uint16_t bf16Round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

double loadAsDouble(const void* p, DType t, size_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(p)[i];
    case DType::kF64: return static_cast<const double*>(p)[i];
    case DType::kF16: return halfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    default: return 0.0;
  }
}

void storeDouble(void* p, DType t, size_t i, double v) {
  switch (t) {
    case DType::kF32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kF64: static_cast<double*>(p)[i] = v; break;
    case DType::kF16: static_cast<uint16_t*>(p)[i] = floatToHalf(static_cast<float>(v)); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = floatToBf16(static_cast<float>(v)); break;
    default: break;
  }
}

constexpr size_t kChunk = 2048;

}  // namespace

__attribute__((target_clones("avx2", "default"))) void floatToBf16N(const float* src, uint16_t* dst, size_t n,
                                                                   float scale) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16Round(src[i] * scale);
}

__attribute__((target_clones("avx2", "default"))) void bf16ToFloatN(const uint16_t* src, float* dst, size_t n,
                                                                   float scale) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    dst[i] = f * scale;
  }
}

void floatToHalfN(const float* src, uint16_t* dst, size_t n, float scale) {
  if (hasF16c()) return floatToHalfF16c(src, dst, n, scale);
  for (size_t i = 0; i < n; ++i) dst[i] = floatToHalf(src[i] * scale);
}

void halfToFloatN(const uint16_t* src, float* dst, size_t n, float scale) {
  if (hasF16c()) return halfToFloatF16c(src, dst, n, scale);
  for (size_t i = 0; i < n; ++i) dst[i] = halfToFloat(src[i]) * scale;
}

namespace internal {

void toFloat(const void* src, DType t, size_t n, float* out, float scale) {
  switch (t) {
    case DType::kF32: {
      const float* s = static_cast<const float*>(src);
      for (size_t i = 0; i < n; ++i) out[i] = s[i] * scale;
      break;
    }
    case DType::kF16: halfToFloatN(static_cast<const uint16_t*>(src), out, n, scale); break;
    case DType::kBF16: bf16ToFloatN(static_cast<const uint16_t*>(src), out, n, scale); break;
    default: break;
  }
}

void fromFloat(const float* in, size_t n, void* dst, DType t) {
  switch (t) {
    case DType::kF32: std::memmove(dst, in, n * sizeof(float)); break;
    case DType::kF16: floatToHalfN(in, static_cast<uint16_t*>(dst), n, 1.0f); break;
    case DType::kBF16: floatToBf16N(in, static_cast<uint16_t*>(dst), n, 1.0f); break;
    default: break;
  }
}

Status checkPair(const char* op, const FlatView& dst, const FlatView& src) {
  if (!isFloatingDType(dst.dtype) || !isFloatingDType(src.dtype)) {
    return invalidArgument(std::string(op) + ": dtypes " + dtypeName(dst.dtype) + " <- " + dtypeName(src.dtype) +
                           " (only f32, f64, f16, bf16)");
  }
  if (dst.count != src.count) {
    return invalidArgument(std::string(op) + ": count mismatch, dst " + std::to_string(dst.count) + " vs src " +
                           std::to_string(src.count));
  }
  if (!(dst.device == src.device)) {
    return invalidArgument(std::string(op) + ": device mismatch, dst " + dst.device.toString() + " vs src " +
                           src.device.toString());
  }
  if (dst.count > 0 && (dst.data == nullptr || src.data == nullptr)) {
    return invalidArgument(std::string(op) + ": null data with count " + std::to_string(dst.count));
  }
  if (dst.data == src.data && dst.count > 0 && dst.dtype != src.dtype) {
    return invalidArgument(std::string(op) + ": in place across dtypes (" + dtypeName(src.dtype) + " -> " +
                           dtypeName(dst.dtype) + ")");
  }
  return Status::ok();
}

#if !DDP_WITH_CUDA
Status noCuda(const char* op) {
  return unimplemented(std::string(op) + " on a CUDA buffer: this build has no CUDA (DDP_WITH_CUDA off)");
}
#endif

Status castScaledCpu(FlatView dst, FlatView src, double scale) {
  const size_t n = src.count;
  if (n == 0) return Status::ok();
  if (dst.dtype == DType::kF64 || src.dtype == DType::kF64) {
    for (size_t i = 0; i < n; ++i) storeDouble(dst.data, dst.dtype, i, loadAsDouble(src.data, src.dtype, i) * scale);
    return Status::ok();
  }
  const float s = static_cast<float>(scale);
  if (dst.dtype == DType::kF32) {
    toFloat(src.data, src.dtype, n, static_cast<float*>(dst.data), s);
    return Status::ok();
  }
  if (src.dtype == DType::kF32) {
    if (dst.dtype == DType::kF16) floatToHalfN(static_cast<const float*>(src.data), static_cast<uint16_t*>(dst.data), n, s);
    else floatToBf16N(static_cast<const float*>(src.data), static_cast<uint16_t*>(dst.data), n, s);
    return Status::ok();
  }
  float tmp[kChunk];
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t m = std::min(kChunk, n - off);
    toFloat(static_cast<const char*>(src.data) + off * 2, src.dtype, m, tmp, s);
    fromFloat(tmp, m, static_cast<char*>(dst.data) + off * 2, dst.dtype);
  }
  return Status::ok();
}

Status axpbyCpu(FlatView dst, double alpha, FlatView src, double beta) {
  const size_t n = src.count;
  if (n == 0) return Status::ok();
  if (alpha == 0.0) return castScaledCpu(dst, src, beta);
  if (dst.dtype == DType::kF64 || src.dtype == DType::kF64) {
    for (size_t i = 0; i < n; ++i) {
      storeDouble(dst.data, dst.dtype, i,
                  alpha * loadAsDouble(dst.data, dst.dtype, i) + beta * loadAsDouble(src.data, src.dtype, i));
    }
    return Status::ok();
  }
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  if (dst.dtype == DType::kF32 && src.dtype == DType::kF32) {
    float* d = static_cast<float*>(dst.data);
    const float* s = static_cast<const float*>(src.data);
    for (size_t i = 0; i < n; ++i) d[i] = a * d[i] + b * s[i];
    return Status::ok();
  }
  float ts[kChunk], td[kChunk];
  const size_t ds = dtypeSize(dst.dtype), ss = dtypeSize(src.dtype);
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t m = std::min(kChunk, n - off);
    char* dp = static_cast<char*>(dst.data) + off * ds;
    toFloat(static_cast<const char*>(src.data) + off * ss, src.dtype, m, ts, b);
    toFloat(dp, dst.dtype, m, td, a);
    for (size_t i = 0; i < m; ++i) td[i] += ts[i];
    fromFloat(td, m, dp, dst.dtype);
  }
  return Status::ok();
}

}  // namespace internal

Status castScaled(FlatView dst, FlatView src, double scale) {
  DDP_RETURN_IF_ERROR(internal::checkPair("castScaled", dst, src));
  if (dst.device.isCuda()) {
#if DDP_WITH_CUDA
    return cuda::castScaled(dst, src, scale);
#else
    return internal::noCuda("castScaled");
#endif
  }
  return internal::castScaledCpu(dst, src, scale);
}

}  // namespace ddp::kernels
