// CUDA implementations of kernels/cast_ops_cuda.h: one elementwise kernel templated on the
// source and destination types, arithmetic in f32 (f64 when either side is f64), round to
// nearest even on narrowing (the CPU twin in cast_ops.cc does the same).
#include "kernels/cast_ops_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

namespace ddp::kernels::cuda {
namespace {

template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename T> __device__ inline float toF(T v) { return static_cast<float>(v); }
template <> __device__ inline float toF<__half>(__half v) { return __half2float(v); }
template <> __device__ inline float toF<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ inline T fromF(float v) { return static_cast<T>(v); }
template <> __device__ inline __half fromF<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 fromF<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T> __device__ inline double toD(T v) { return static_cast<double>(toF<T>(v)); }
template <> __device__ inline double toD<double>(double v) { return v; }
template <typename T> __device__ inline T fromD(double v) { return fromF<T>(static_cast<float>(v)); }
template <> __device__ inline double fromD<double>(double v) { return v; }

// dst = alpha * dst + beta * src; alpha == 0 never reads dst.
template <typename D, typename S, bool kDouble>
__global__ void axpbyKernel(D* dst, const S* src, size_t n, double alpha, double beta) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (kDouble) {
      // Explicit _rn ops: no FMA contraction, so results match the CPU twin bit for bit.
      double v = __dmul_rn(beta, toD<S>(src[i]));
      if (alpha != 0.0) v = __dadd_rn(__dmul_rn(alpha, toD<D>(dst[i])), v);
      dst[i] = fromD<D>(v);
    } else {
      const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
      float v = __fmul_rn(toF<S>(src[i]), b);
      if (alpha != 0.0) v = __fadd_rn(__fmul_rn(toF<D>(dst[i]), a), v);
      dst[i] = fromF<D>(v);
    }
  }
}

Status cudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internalError(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename D, typename S>
Status launch(FlatView dst, FlatView src, double alpha, double beta) {
  constexpr bool kDouble = std::is_same_v<D, double> || std::is_same_v<S, double>;
  const size_t n = src.count;
  const int threads = 256;
  const size_t want = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 4096 ? want : 4096);
  DDP_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(dst.device.index), "cudaSetDevice"));
  axpbyKernel<D, S, kDouble><<<blocks, threads>>>(static_cast<D*>(dst.data), static_cast<const S*>(src.data), n,
                                                  alpha, beta);
  DDP_RETURN_IF_ERROR(cudaStatus(cudaGetLastError(), "axpby kernel launch"));
  return cudaStatus(cudaStreamSynchronize(0), "axpby kernel");
}

template <typename D>
Status dispatchSrc(FlatView dst, FlatView src, double alpha, double beta) {
  switch (src.dtype) {
    case DType::kF32: return launch<D, float>(dst, src, alpha, beta);
    case DType::kF64: return launch<D, double>(dst, src, alpha, beta);
    case DType::kF16: return launch<D, __half>(dst, src, alpha, beta);
    case DType::kBF16: return launch<D, __nv_bfloat16>(dst, src, alpha, beta);
    default: return invalidArgument(std::string("cuda axpby: source dtype ") + dtypeName(src.dtype));
  }
}

}  // namespace

Status axpby(FlatView dst, double alpha, FlatView src, double beta) {
  if (src.count == 0) return Status::ok();
  switch (dst.dtype) {
    case DType::kF32: return dispatchSrc<float>(dst, src, alpha, beta);
    case DType::kF64: return dispatchSrc<double>(dst, src, alpha, beta);
    case DType::kF16: return dispatchSrc<__half>(dst, src, alpha, beta);
    case DType::kBF16: return dispatchSrc<__nv_bfloat16>(dst, src, alpha, beta);
    default: return invalidArgument(std::string("cuda axpby: destination dtype ") + dtypeName(dst.dtype));
  }
}

Status castScaled(FlatView dst, FlatView src, double scale) { return axpby(dst, 0.0, src, scale); }

Status castToBf16Async(cudaStream_t stream, const float* src, void* dst, size_t n) {
  if (n == 0) return Status::ok();
  const int threads = 256;
  const size_t want = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 4096 ? want : 4096);
  // alpha 0 never reads dst; src * 1.0f is src exactly, then __float2bfloat16_rn.
  axpbyKernel<__nv_bfloat16, float, false><<<blocks, threads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), src, n,
                                                                           0.0, 1.0);
  return cudaStatus(cudaGetLastError(), "bf16 cast kernel launch");
}

Status fillZero(FlatView buf) {
  DDP_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(buf.device.index), "cudaSetDevice"));
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMemsetAsync(buf.data, 0, buf.bytes(), 0), "cudaMemsetAsync"));
  return cudaStatus(cudaStreamSynchronize(0), "fillZero");
}

}  // namespace ddp::kernels::cuda
