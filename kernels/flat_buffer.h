#pragma once
// FlatBuffer: owned, 64-byte aligned memory for `count` elements of one dtype on one device
// (host memory for CPU, cudaMalloc for CUDA). Zero-filled on allocation. Move-only.
// Thread model: a plain owning value; not synchronised.

#include <cstddef>

#include "common/status.h"
#include "kernels/flat_view.h"

namespace ddp::kernels {

class FlatBuffer {
 public:
  FlatBuffer() = default;
  ~FlatBuffer();
  FlatBuffer(FlatBuffer&& other) noexcept;
  FlatBuffer& operator=(FlatBuffer&& other) noexcept;
  FlatBuffer(const FlatBuffer&) = delete;
  FlatBuffer& operator=(const FlatBuffer&) = delete;

  // Unimplemented for CUDA in a build without CUDA; Internal if the allocation fails.
  static Result<FlatBuffer> allocate(size_t count, DType dtype, Device device);

  FlatView view() const { return view_; }
  void* data() const { return view_.data; }
  size_t count() const { return view_.count; }

 private:
  void release();
  FlatView view_;
};

// Copies src into dst (same count and dtype) across any pair of devices (host <-> CUDA through
// cudaMemcpy, synchronous). Unimplemented for CUDA views in a build without CUDA.
Status copyFlat(FlatView dst, FlatView src);

}  // namespace ddp::kernels
