#include "worker/comm/nccl_half_cast_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace ddp::comm {
namespace {

constexpr int kThreads = 256;

template <typename H>
__device__ float toFloat(H v);
template <>
__device__ float toFloat<__half>(__half v) { return __half2float(v); }
template <>
__device__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename H>
__device__ H fromFloat(float v);
template <>
__device__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename H>
__global__ void toF32Kernel(const H* src, float* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    dst[i] = toFloat<H>(src[i]);
  }
}

template <typename H>
__global__ void fromF32Kernel(const float* src, H* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    dst[i] = fromFloat<H>(src[i]);
  }
}

unsigned blocks(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 4096 ? (b == 0 ? 1 : b) : 4096);
}

}  // namespace

int castHalfToF32(const void* src, float* dst, size_t n, bool bf16, void* stream) {
  if (n == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16) {
    toF32Kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), dst, n);
  } else {
    toF32Kernel<<<blocks(n), kThreads, 0, s>>>(static_cast<const __half*>(src), dst, n);
  }
  return cudaGetLastError();
}

int castF32ToHalf(const float* src, void* dst, size_t n, bool bf16, void* stream) {
  if (n == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16) {
    fromF32Kernel<<<blocks(n), kThreads, 0, s>>>(src, static_cast<__nv_bfloat16*>(dst), n);
  } else {
    fromF32Kernel<<<blocks(n), kThreads, 0, s>>>(src, static_cast<__half*>(dst), n);
  }
  return cudaGetLastError();
}

}  // namespace ddp::comm
