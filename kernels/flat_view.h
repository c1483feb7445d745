#pragma once
// FlatView: a non-owning view of a flat array of one dtype on one device, the argument type of
// the bucket and cast kernels (kernels/ sits below worker/comm, so it cannot use BufferView;
// comm::BufferView has the same four fields, and comm::flat() in worker/comm/types.h converts).
// Thread model: a plain value.

#include <cstddef>

#include "common/dtype.h"

namespace ddp::kernels {

struct FlatView {
  void* data = nullptr;
  size_t count = 0;  // elements
  DType dtype = DType::kF32;
  Device device = Device::cpu();

  size_t bytes() const { return count * dtypeSize(dtype); }
  FlatView slice(size_t offset, size_t n) const {
    return {static_cast<char*>(data) + offset * dtypeSize(dtype), n, dtype, device};
  }
};

// True for the dtypes the bucket and cast kernels accept: f32, f64, f16, bf16.
inline bool isFloatingDType(DType d) {
  return d == DType::kF32 || d == DType::kF64 || d == DType::kF16 || d == DType::kBF16;
}

}  // namespace ddp::kernels
