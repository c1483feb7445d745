// CUDA device selection for the optimizer's kernels (built only with DDP_WITH_CUDA).
#include <cuda_runtime.h>

#include <string>

#include "common/status.h"

namespace ddp::optim {

Status setCudaDevice(int index) {
  const cudaError_t err = cudaSetDevice(index);
  if (err != cudaSuccess) {
    return internalError("cudaSetDevice(" + std::to_string(index) + "): " + cudaGetErrorString(err));
  }
  return Status::ok();
}

}  // namespace ddp::optim
