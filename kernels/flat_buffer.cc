#include "kernels/flat_buffer.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace ddp::kernels {

#if DDP_WITH_CUDA
// In flat_buffer_cuda.cc.
Result<void*> cudaAllocZeroed(size_t bytes, int device);
void cudaFreeBuffer(void* p, int device);
Status cudaCopy(void* dst, const void* src, size_t bytes, int device);
#endif

FlatBuffer::~FlatBuffer() { release(); }

FlatBuffer::FlatBuffer(FlatBuffer&& other) noexcept : view_(std::exchange(other.view_, FlatView{})) {}

FlatBuffer& FlatBuffer::operator=(FlatBuffer&& other) noexcept {
  if (this != &other) {
    release();
    view_ = std::exchange(other.view_, FlatView{});
  }
  return *this;
}

void FlatBuffer::release() {
  if (view_.data == nullptr) return;
#if DDP_WITH_CUDA
  if (view_.device.isCuda()) {
    cudaFreeBuffer(view_.data, view_.device.index);
    view_.data = nullptr;
    return;
  }
#endif
  std::free(view_.data);
  view_.data = nullptr;
}

Result<FlatBuffer> FlatBuffer::allocate(size_t count, DType dtype, Device device) {
  FlatBuffer buf;
  buf.view_ = FlatView{nullptr, count, dtype, device};
  const size_t bytes = count * dtypeSize(dtype);
  if (device.isCuda()) {
#if DDP_WITH_CUDA
    DDP_ASSIGN_OR_RETURN(buf.view_.data, cudaAllocZeroed(bytes, device.index));
    return buf;
#else
    return unimplemented("FlatBuffer on " + device.toString() + ": this build has no CUDA");
#endif
  }
  const size_t rounded = (bytes + 63) / 64 * 64;
  buf.view_.data = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (buf.view_.data == nullptr) return internalError("FlatBuffer: out of host memory for " + std::to_string(bytes) + " bytes");
  std::memset(buf.view_.data, 0, rounded == 0 ? 64 : rounded);
  return buf;
}

Status copyFlat(FlatView dst, FlatView src) {
  if (dst.count != src.count || dst.dtype != src.dtype) {
    return invalidArgument("copyFlat: dst " + std::to_string(dst.count) + " x " + dtypeName(dst.dtype) + ", src " +
                           std::to_string(src.count) + " x " + dtypeName(src.dtype));
  }
  if (src.count == 0 || dst.data == src.data) return Status::ok();
  if (dst.device.isCpu() && src.device.isCpu()) {
    std::memmove(dst.data, src.data, src.bytes());
    return Status::ok();
  }
#if DDP_WITH_CUDA
  return cudaCopy(dst.data, src.data, src.bytes(), dst.device.isCuda() ? dst.device.index : src.device.index);
#else
  return unimplemented("copyFlat between " + src.device.toString() + " and " + dst.device.toString() +
                       ": this build has no CUDA");
#endif
}

}  // namespace ddp::kernels
