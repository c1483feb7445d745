#include "worker/model/model_options.h"

namespace ddp::model {

Result<std::unique_ptr<kernels::LayerOps>> makeLayerOps(const ModelOptions& options) {
  if (options.device.isCpu()) {
    return kernels::makeCpuLayerOps(kernels::CpuOpsOptions{options.cpuThreads, options.maxAllocationBytes});
  }
  return kernels::makeCudaLayerOps(options.device.index);
}

}  // namespace ddp::model
