#pragma once
// ModelOptions: where and how a built-in model is created. Thread model: plain value.

#include <cstdint>
#include <memory>

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/layer_ops.h"

namespace ddp::model {

struct ModelOptions {
  Device device = Device::cpu();
  uint64_t seed = 0;      // deterministic init: same seed -> bitwise same parameters
  int cpuThreads = 1;     // OpenBLAS threads (process-wide); 0 leaves the current setting
  size_t maxAllocationBytes = 0;  // CPU: kernels::CpuOpsOptions (tests inject a failure); 0 none
};

// The LayerOps for options.device (CPU, or CUDA when built with it and a GPU is present).
Result<std::unique_ptr<kernels::LayerOps>> makeLayerOps(const ModelOptions& options);

}  // namespace ddp::model
