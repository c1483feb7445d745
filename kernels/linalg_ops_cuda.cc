#include "kernels/linalg_ops_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <string>

namespace ddp::kernels::linalg::cuda {
namespace {

// Note [cuBLAS handles]
// A cuBLAS handle is bound to the device current when it was created and must not be used by
// two threads at once, so each thread keeps one handle per device, destroyed at thread exit.
class HandleCache {
 public:
  ~HandleCache() {
    for (auto& [dev, h] : handles_) cublasDestroy(h);
  }
  Result<cublasHandle_t> get(int device) {
    auto it = handles_.find(device);
    if (it != handles_.end()) return it->second;
    cublasHandle_t h = nullptr;
    cublasStatus_t st = cublasCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) {
      return internalError("cublasCreate on cuda:" + std::to_string(device) + " failed: " +
                           cublasGetStatusString(st));
    }
    handles_.emplace(device, h);
    return h;
  }

 private:
  std::map<int, cublasHandle_t> handles_;
};

}  // namespace

Status sgemm(Device device, const GemmShape& s, float alpha, const float* a, const float* b,
             float beta, float* c, void* stream) {
  int previous = 0;
  if (cudaError_t e = cudaGetDevice(&previous); e != cudaSuccess) {
    return internalError(std::string("sgemm: cudaGetDevice: ") + cudaGetErrorString(e));
  }
  if (previous != device.index) {
    if (cudaError_t e = cudaSetDevice(device.index); e != cudaSuccess) {
      return internalError("sgemm: cudaSetDevice(" + std::to_string(device.index) + "): " + cudaGetErrorString(e));
    }
  }
  thread_local HandleCache cache;
  auto handle = cache.get(device.index);
  Status result = handle.status();
  if (handle.isOk()) {
    cublasSetStream(*handle, static_cast<cudaStream_t>(stream));
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    cublasStatus_t st = cublasSgemmStridedBatched(
        *handle, s.transB ? CUBLAS_OP_T : CUBLAS_OP_N, s.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(s.n), static_cast<int>(s.m), static_cast<int>(s.k), &alpha, b,
        static_cast<int>(s.ldb), s.strideB, a, static_cast<int>(s.lda), s.strideA, &beta, c,
        static_cast<int>(s.ldc), s.strideC, static_cast<int>(s.batch));
    if (st != CUBLAS_STATUS_SUCCESS) {
      result = internalError(std::string("cublasSgemmStridedBatched: ") + cublasGetStatusString(st));
    } else if (stream == nullptr) {
      if (cudaError_t e = cudaStreamSynchronize(nullptr); e != cudaSuccess) {
        result = internalError(std::string("sgemm: ") + cudaGetErrorString(e));
      }
    }
  }
  if (previous != device.index) cudaSetDevice(previous);
  return result;
}

}  // namespace ddp::kernels::linalg::cuda
