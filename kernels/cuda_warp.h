#pragma once
// Helpers of the row-wise CUDA kernels of kernels/transformer_ops.cu and attention_ops.cu
// (included only by .cu files): one warp per row, warp reductions, workspace alignment.
// Thread model: stateless.

#include <cstddef>
#include <cstdint>

#include "kernels/cuda_launch.h"

namespace ddp::kernels::transformer::cuda {

constexpr int kWarp = 32;

// Workspace arrays start on 256-byte boundaries.
inline size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Blocks for one warp per row, capped for the grid-stride loop over rows.
inline int warpBlocksFor(int64_t rows) { return blocksFor(rows * kWarp); }

__device__ inline float warpSum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warpMax(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Loop over rows, one warp each; `lane` is the thread's index in its warp. The row index is the
// same for the whole warp, so warp shuffles inside the loop are safe.
#define DDP_WARP_PER_ROW(row, lane, rows)                                                  \
  const int lane = threadIdx.x % kWarp;                                                    \
  for (int64_t row = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / kWarp; row < (rows); \
       row += int64_t{gridDim.x} * blockDim.x / kWarp)

}  // namespace ddp::kernels::transformer::cuda
