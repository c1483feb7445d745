// cudaDeviceName (model_flops.h), built only with DDP_WITH_CUDA.
#include <cuda_runtime.h>

#include "worker/training/model_flops.h"

namespace ddp::runtime {

Result<std::string> cudaDeviceName(int index) {
  cudaDeviceProp props{};
  const cudaError_t err = cudaGetDeviceProperties(&props, index);
  if (err != cudaSuccess) {
    return internalError("cudaGetDeviceProperties(" + std::to_string(index) + "): " + cudaGetErrorString(err));
  }
  return std::string(props.name);
}

}  // namespace ddp::runtime
