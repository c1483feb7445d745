#pragma once
// Vocabulary of the collective layer: reduce ops, op types, buffer views, per-op options.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/dtype.h"
#include "kernels/flat_view.h"

namespace ddp::comm {

enum class ReduceOp : uint8_t { kSum = 0, kAvg, kMin, kMax, kProduct };
const char* reduceOpName(ReduceOp op);

enum class OpType : uint8_t {
  kAllreduce = 0,
  kBroadcast,
  kAllgather,
  kReduceScatter,
  kGather,
  kBarrier,
  kSend,
  kRecv,
  kCoalesced,  // the one Work of a coalescing scope
};
const char* opTypeName(OpType op);

// A non-owning view of a flat buffer. The caller keeps the memory alive until the Work that
// uses it completes (or fails).
struct BufferView {
  void* data = nullptr;
  size_t count = 0;  // elements
  DType dtype = DType::kF32;
  Device device = Device::cpu();

  size_t bytes() const { return count * dtypeSize(dtype); }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
  // A sub-view of `n` elements starting at element `offset`.
  BufferView slice(size_t offset, size_t n) const {
    return {static_cast<char*>(data) + offset * dtypeSize(dtype), n, dtype, device};
  }
};

// The same view as the kernels' argument type (kernels/flat_view.h; the kernels sit below this
// layer and cannot name BufferView).
inline kernels::FlatView flat(const BufferView& v) { return {v.data, v.count, v.dtype, v.device}; }

template <typename T>
BufferView viewOf(T* data, size_t count, DType dtype, Device device = Device::cpu()) {
  return {static_cast<void*>(data), count, dtype, device};
}
inline BufferView viewOf(float* p, size_t n) { return {p, n, DType::kF32, Device::cpu()}; }
inline BufferView viewOf(double* p, size_t n) { return {p, n, DType::kF64, Device::cpu()}; }
inline BufferView viewOf(int32_t* p, size_t n) { return {p, n, DType::kI32, Device::cpu()}; }
inline BufferView viewOf(int64_t* p, size_t n) { return {p, n, DType::kI64, Device::cpu()}; }

// Default collective timeout (PyTorch's is 10 minutes too).
inline constexpr Duration kDefaultOpTimeout = std::chrono::minutes(10);

struct OpOptions {
  // Overrides the backend's default timeout for this op.
  std::optional<Duration> timeout;
};

}  // namespace ddp::comm
