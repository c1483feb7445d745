#pragma once
// Scalar math written so that GCC/Clang auto-vectorize the loops that call it (kernels/*.cc
// only; CUDA code uses expf). Thread model: pure functions.
//
// Note [Vectorizable exp]
// std::exp is a libm call: a loop over it runs one element at a time, and the softmax of
// attention rows, the cross-entropy over a vocabulary and the tanh GELU each spend most of
// their time there. expApprox is Cephes' expf (range reduction by ln 2 in two parts, a degree-6
// polynomial, the exponent built by bit arithmetic): relative error below 2e-7 (about 2 ulp,
// checked against double exp in tests/kernels/transformer_ops_test.cc), branch-free, so the
// compiler turns a loop over it into SSE/AVX code. Inputs are clamped to [-87.3, 88.3]:
// exp(x) for x < -87.3 comes out as about 1e-38 instead of a denormal or 0, and for x > 88.3
// as about 2e38 instead of inf; softmax (arguments <= 0, sums >= 1) and the tanh GELU (which
// divides by 1 + exp) do not see the difference. GCC vectorizes the clamp only with
// -fno-trapping-math: files that call expApprox get it in kernels/CMakeLists.txt.

#include <bit>
#include <cstdint>

// Note [Vector clones]
// The project builds for baseline x86-64 (SSE2), so the loops above vectorize 4 floats wide.
// The hot elementwise ops (GELU, the norms, the attention softmax, the cross-entropy, bias and
// residual adds) carry DDP_VECTOR_CLONES: GCC compiles them also for AVX2 and AVX-512 and picks
// one per process at load time (an ifunc on the CPU's features), 8 or 16 floats wide. Every clone
// computes the same IEEE operations in the same order: the files that use it are compiled with
// -ffp-contract=off (kernels/CMakeLists.txt), so no clone fuses a multiply and an add into an FMA,
// and the 8 partial sums of sum8 fix the order of every reduction whatever the vector width.
// So a clone's results equal the SSE2 code's bit for bit (tests/kernels/transformer_ops_test.cc
// checks each op against the SSE2 build of the same source).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__) && !defined(__SANITIZE_ADDRESS__)
#define DDP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DDP_VECTOR_CLONES
#endif

namespace ddp::kernels::cpu {

inline float expApprox(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest even; no libm call).
  float fx = x * 1.44269504088896341f + 12582912.f;
  fx -= 12582912.f;
  const float r = (x - fx * 0.693359375f) - fx * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * (r * r) + r + 1.f;
  const int32_t n = static_cast<int32_t>(fx);  // in [-126, 127] after the clamp
  return e * std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
}

// Sum with 8 independent partial sums: vectorizes without reassociation flags. The order is
// fixed, so a sum gives the same bits every run.
inline float sum8(const float* x, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) part[k] += x[i + k];
  }
  float s = 0.f;
  for (; i < n; ++i) s += x[i];
  for (int k = 0; k < 8; ++k) s += part[k];
  return s;
}

}  // namespace ddp::kernels::cpu
