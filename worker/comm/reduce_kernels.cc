#include "worker/comm/reduce_kernels.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ddp::comm {
namespace {

template <typename T>
void sumK(void* o, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(o);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}
template <typename T>
void prodK(void* o, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(o);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * y[i];
}
template <typename T>
void minK(void* o, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(o);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] < y[i] ? x[i] : y[i];
}
template <typename T>
void maxK(void* o, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(o);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] > y[i] ? x[i] : y[i];
}

template <typename T>
ReduceKernel typed(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return &sumK<T>;
    case ReduceOp::kProduct: return &prodK<T>;
    case ReduceOp::kMin: return &minK<T>;
    case ReduceOp::kMax: return &maxK<T>;
  }
  return nullptr;
}

template <typename T>
void divideTyped(void* data, size_t n, int divisor) {
  T* p = static_cast<T*>(data);
  const T d = static_cast<T>(divisor);
  // Dividing by a power of two is multiplying by its exact reciprocal: both give the correctly
  // rounded x / d, bit for bit, and a multiply costs a fraction of a divide (the average of an
  // allreduce over 2, 4, 8 ... ranks).
  if constexpr (std::is_floating_point_v<T>) {
    if ((divisor & (divisor - 1)) == 0) {
      const T r = T(1) / d;
      for (size_t i = 0; i < n; ++i) p[i] *= r;
      return;
    }
  }
  for (size_t i = 0; i < n; ++i) p[i] /= d;
}

}  // namespace

ReduceKernel reduceKernel(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kF32: return typed<float>(op);
    case DType::kF64: return typed<double>(op);
    case DType::kI32: return typed<int32_t>(op);
    case DType::kI64: return typed<int64_t>(op);
    case DType::kF16:
    case DType::kBF16: return halfReduceKernel(dtype, op);
  }
  return nullptr;
}

void divideInPlace(BufferView buf, int divisor) {
  if (divisor == 1 || buf.count == 0) return;
  switch (buf.dtype) {
    case DType::kF32: divideTyped<float>(buf.data, buf.count, divisor); break;
    case DType::kF64: divideTyped<double>(buf.data, buf.count, divisor); break;
    case DType::kI32: divideTyped<int32_t>(buf.data, buf.count, divisor); break;
    case DType::kI64: divideTyped<int64_t>(buf.data, buf.count, divisor); break;
    case DType::kF16:
    case DType::kBF16: halfDivide(buf.dtype, buf.data, buf.count, static_cast<float>(divisor)); break;
  }
}

void foldInRankOrder(const char* all, size_t stride, int ranks, BufferView out, ReduceOp op) {
  std::memcpy(out.data, all, out.bytes());
  const ReduceKernel kernel = reduceKernel(out.dtype, op);
  for (int r = 1; r < ranks; ++r) kernel(out.data, out.data, all + static_cast<size_t>(r) * stride, out.count);
  if (op == ReduceOp::kAvg) divideInPlace(out, ranks);
}

}  // namespace ddp::comm
