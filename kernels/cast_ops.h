#pragma once
// Casts between the floating dtypes (f32, f64, f16, bf16) with an optional scale, the kernels
// behind fp16/bf16 compression hooks and mixed-precision reduction.
//
// Every function has a CPU implementation (the oracle: vectorised with F16C/AVX2 where the CPU
// has them, scalar otherwise, identical results) and a CUDA implementation selected by the
// views' device (both views on the same device). CUDA calls run on the default stream and
// return once the result is in place. In a build without CUDA, CUDA views give Unimplemented.
// Rounding: round to nearest even for every narrowing conversion, on both devices.
// Thread model: stateless; concurrent calls on disjoint memory are safe.

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "kernels/flat_view.h"

namespace ddp::kernels {

// dst[i] = dtype(dst)(src[i] * scale) for i < count. Counts and devices must match. dst and src
// may be the same memory only when they also have the same dtype (an in-place scale).
// Arithmetic runs in f32, or f64 when either side is f64.
Status castScaled(FlatView dst, FlatView src, double scale = 1.0);

// Raw CPU converters (vectorised), n elements, dst = src * scale rounded to nearest even.
void floatToHalfN(const float* src, uint16_t* dst, size_t n, float scale = 1.0f);
void halfToFloatN(const uint16_t* src, float* dst, size_t n, float scale = 1.0f);
void floatToBf16N(const float* src, uint16_t* dst, size_t n, float scale = 1.0f);
void bf16ToFloatN(const uint16_t* src, float* dst, size_t n, float scale = 1.0f);

}  // namespace ddp::kernels
