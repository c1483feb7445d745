#pragma once
// CUDA implementations behind kernels/linalg_ops.h (compiled only with DDP_WITH_CUDA).
// Thread model: as kernels/linalg_ops.h (one cuBLAS handle per thread and device).

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/linalg_ops.h"

namespace ddp::kernels::linalg::cuda {

// Precondition: validateGemm(shape) passed and m, n, batch > 0.
Status sgemm(Device device, const GemmShape& shape, float alpha, const float* a, const float* b,
             float beta, float* c, void* stream);

}  // namespace ddp::kernels::linalg::cuda
