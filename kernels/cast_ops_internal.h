#pragma once
// Helpers shared by kernels/cast_ops.cc and kernels/bucket_ops.cc (not a public API).
// Thread model: stateless.

#include <cstddef>

#include "common/status.h"
#include "kernels/flat_view.h"

namespace ddp::kernels::internal {

// out[i] = float(src[i]) * scale for f32 / f16 / bf16 sources.
void toFloat(const void* src, DType t, size_t n, float* out, float scale);
// dst[i] = dtype(in[i]) for f32 / f16 / bf16 destinations (round to nearest even).
void fromFloat(const float* in, size_t n, void* dst, DType t);
// Validates a (dst, src) pair: floating dtypes, equal counts and devices, no cross-dtype alias.
Status checkPair(const char* op, const FlatView& dst, const FlatView& src);
#if !DDP_WITH_CUDA
Status noCuda(const char* op);
#endif
Status castScaledCpu(FlatView dst, FlatView src, double scale);
Status axpbyCpu(FlatView dst, double alpha, FlatView src, double beta);

}  // namespace ddp::kernels::internal
