#pragma once
// Bucket kernels of the DDP reducer: pack per-parameter gradients into one flat bucket buffer
// (with a scale and an optional dtype conversion, e.g. f32 gradients into an f16 bucket), unpack
// them back, scale in place, zero, and dst = alpha * dst + beta * src (gradient accumulation).
//
// Same device rules as kernels/cast_ops.h: a CPU twin (the oracle) and a CUDA implementation
// chosen by the views' device; CUDA calls run on the default stream and return once done.
// Dtypes: f32, f64, f16, bf16 (any mix between gradient and bucket); arithmetic in f32, or f64
// when either side is f64.
// Thread model: stateless; concurrent calls on disjoint memory are safe.

#include <vector>

#include "common/status.h"
#include "kernels/flat_view.h"

namespace ddp::kernels {

// buf *= scale.
Status scaleInPlace(FlatView buf, double scale);
// buf = 0.
Status fillZero(FlatView buf);
// dst = alpha * dst + beta * src (dst's old value is not read when alpha == 0, so NaN or
// garbage there does not leak). Counts and devices must match; dtypes may differ.
Status axpby(FlatView dst, double alpha, FlatView src, double beta);
// Copies grads[k] * scale into bucket back to back (grads[0] at element 0, grads[1] right after,
// ...). The grads' counts must sum to at most bucket.count.
Status packBucket(FlatView bucket, const std::vector<FlatView>& grads, double scale = 1.0);
// The inverse: grads[k] = bucket slice k * scale.
Status unpackBucket(FlatView bucket, const std::vector<FlatView>& grads, double scale = 1.0);

}  // namespace ddp::kernels
