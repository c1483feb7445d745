// CUDA allocation behind kernels/flat_buffer.h (built only with DDP_WITH_CUDA).
#include <cuda_runtime.h>

#include <string>

#include "kernels/flat_buffer.h"

namespace ddp::kernels {

Result<void*> cudaAllocZeroed(size_t bytes, int device) {
  cudaError_t err = cudaSetDevice(device);
  void* p = nullptr;
  if (err == cudaSuccess) err = cudaMalloc(&p, bytes == 0 ? 64 : bytes);
  if (err == cudaSuccess) err = cudaMemset(p, 0, bytes == 0 ? 64 : bytes);
  if (err != cudaSuccess) {
    if (p != nullptr) cudaFree(p);
    return internalError("FlatBuffer: cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" +
                         std::to_string(device) + ": " + cudaGetErrorString(err));
  }
  return p;
}

void cudaFreeBuffer(void* p, int device) {
  (void)cudaSetDevice(device);
  (void)cudaFree(p);
}

Status cudaCopy(void* dst, const void* src, size_t bytes, int device) {
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (err != cudaSuccess) {
    return internalError("copyFlat: cudaMemcpy of " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(err));
  }
  return Status::ok();
}

}  // namespace ddp::kernels
