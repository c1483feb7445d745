#include "kernels/bucket_ops.h"

#include <cstring>
#include <string>

#include "kernels/cast_ops.h"
#include "kernels/cast_ops_internal.h"
#if DDP_WITH_CUDA
#include "kernels/cast_ops_cuda.h"
#endif

namespace ddp::kernels {

Status scaleInPlace(FlatView buf, double scale) {
  if (scale == 1.0) return Status::ok();
  return castScaled(buf, buf, scale);
}

Status fillZero(FlatView buf) {
  if (!isFloatingDType(buf.dtype)) {
    return invalidArgument(std::string("fillZero: dtype ") + dtypeName(buf.dtype) + " (only f32, f64, f16, bf16)");
  }
  if (buf.count == 0) return Status::ok();
  if (buf.data == nullptr) return invalidArgument("fillZero: null data with count " + std::to_string(buf.count));
  if (buf.device.isCuda()) {
#if DDP_WITH_CUDA
    return cuda::fillZero(buf);
#else
    return internal::noCuda("fillZero");
#endif
  }
  std::memset(buf.data, 0, buf.bytes());  // +0.0 is all-zero bits in every floating dtype
  return Status::ok();
}

Status axpby(FlatView dst, double alpha, FlatView src, double beta) {
  DDP_RETURN_IF_ERROR(internal::checkPair("axpby", dst, src));
  if (dst.device.isCuda()) {
#if DDP_WITH_CUDA
    return cuda::axpby(dst, alpha, src, beta);
#else
    return internal::noCuda("axpby");
#endif
  }
  return internal::axpbyCpu(dst, alpha, src, beta);
}

namespace {

// Checks that the grads fit in the bucket; returns their total count.
Status checkBucket(const char* op, const FlatView& bucket, const std::vector<FlatView>& grads) {
  size_t total = 0;
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!(grads[k].device == bucket.device)) {
      return invalidArgument(std::string(op) + ": gradient " + std::to_string(k) + " on " +
                             grads[k].device.toString() + ", bucket on " + bucket.device.toString());
    }
    total += grads[k].count;
  }
  if (total > bucket.count) {
    return invalidArgument(std::string(op) + ": gradients hold " + std::to_string(total) +
                           " elements, bucket only " + std::to_string(bucket.count));
  }
  return Status::ok();
}

}  // namespace

Status packBucket(FlatView bucket, const std::vector<FlatView>& grads, double scale) {
  DDP_RETURN_IF_ERROR(checkBucket("packBucket", bucket, grads));
  size_t off = 0;
  for (size_t k = 0; k < grads.size(); ++k) {
    Status st = castScaled(bucket.slice(off, grads[k].count), grads[k], scale);
    if (!st.isOk()) return st.withContext("packBucket gradient " + std::to_string(k));
    off += grads[k].count;
  }
  return Status::ok();
}

Status unpackBucket(FlatView bucket, const std::vector<FlatView>& grads, double scale) {
  DDP_RETURN_IF_ERROR(checkBucket("unpackBucket", bucket, grads));
  size_t off = 0;
  for (size_t k = 0; k < grads.size(); ++k) {
    Status st = castScaled(grads[k], bucket.slice(off, grads[k].count), scale);
    if (!st.isOk()) return st.withContext("unpackBucket gradient " + std::to_string(k));
    off += grads[k].count;
  }
  return Status::ok();
}

}  // namespace ddp::kernels
