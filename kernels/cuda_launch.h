#pragma once
// Launch helpers shared by the CUDA kernels of kernels/*.cu (included only by .cu files):
// the block size, a grid size capped for grid-stride loops, the grid-stride loop, and the
// conversion of CUDA and cuBLAS results into Status for launchers that return one.
// Thread model: stateless.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::kernels {

constexpr int kThreads = 256;

inline int blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

#define DDP_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

// Ok, or an internal error "what: <CUDA's message>".
inline Status cudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return internalError(std::string(what) + ": " + cudaGetErrorString(e));
}
// The error of the last launch on this thread (cudaGetLastError), as above.
inline Status launchStatus(const char* what) { return cudaStatus(cudaGetLastError(), what); }
inline Status blasStatus(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internalError(std::string(what) + " failed with cuBLAS status " + std::to_string(static_cast<int>(s)));
}

}  // namespace ddp::kernels
