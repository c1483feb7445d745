// CUDA versions of the transformer ops (kernels/transformer_ops_cuda.h): one warp per row for
// the row-wise ops, one block per row for the cross-entropy over a vocabulary, a stable radix
// sort for the embedding gradient (the attention is in kernels/attention_ops.cu). Reductions use
// fixed trees (no float atomics): deterministic.
#include <cub/device/device_radix_sort.cuh>

#include <cfloat>
#include <climits>
#include <cmath>

#include "kernels/cuda_launch.h"
#include "kernels/cuda_warp.h"
#include "kernels/transformer_ops.h"
#include "kernels/transformer_ops_cuda.h"

namespace ddp::kernels::transformer::cuda {
namespace {

// Rows per partial sum of the norm parameter gradients (Note [Norm parameter gradients]).
constexpr int kNormRowsPerChunk = 64;

// ---- embedding ----

__global__ void embeddingForwardKernel(const int32_t* ids, int64_t n, const float* table, int dim,
                                       float* out, bool acc) {
  DDP_GRID_STRIDE(i, n * dim) {
    const float v = table[int64_t{ids[i / dim]} * dim + i % dim];
    out[i] = acc ? out[i] + v : v;
  }
}

__global__ void iotaKernel(int32_t* v, int n) {
  DDP_GRID_STRIDE(i, int64_t{n}) { v[i] = static_cast<int32_t>(i); }
}

// Note [Embedding gradient order]: the (id, position) pairs are sorted stably by id, so the rows
// of one id form a segment in increasing position. The block at a segment's first entry sums
// the segment's dout rows in that order onto dtable's row: per element exactly the additions
// the CPU twin makes, in the same order, hence the same bits.
__global__ void embeddingSegmentKernel(const int32_t* keys, const int32_t* positions, int n,
                                       const float* dout, int dim, int vocab, float* dtable) {
  for (int p = blockIdx.x; p < n; p += gridDim.x) {
    const int32_t v = keys[p];
    if ((p > 0 && keys[p - 1] == v) || v < 0 || v >= vocab) continue;
    float* dst = dtable + int64_t{v} * dim;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) {
      float s = dst[d];
      for (int q = p; q < n && keys[q] == v; ++q) s += dout[int64_t{positions[q]} * dim + d];
      dst[d] = s;
    }
  }
}

int keyBits(int vocab) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

size_t sortTempBytes(int n, int vocab) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                  static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                  static_cast<int32_t*>(nullptr), n, 0, keyBits(vocab));
  return bytes;
}

// ---- LayerNorm / RMSNorm ----

// mean == nullptr: RMSNorm (no centering, no beta).
__global__ void normForwardKernel(const float* x, const float* gamma, const float* beta, int64_t rows,
                                  int dim, float eps, float* y, float* mean, float* rstd) {
  DDP_WARP_PER_ROW(r, lane, rows) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float mu = 0.f;
    if (mean != nullptr) {
      float s = 0.f;
      for (int c = lane; c < dim; c += kWarp) s += xr[c];
      mu = warpSum(s) / static_cast<float>(dim);
    }
    float q = 0.f;
    for (int c = lane; c < dim; c += kWarp) q += (xr[c] - mu) * (xr[c] - mu);
    const float rs = 1.f / sqrtf(warpSum(q) / static_cast<float>(dim) + eps);
    for (int c = lane; c < dim; c += kWarp) {
      const float v = (xr[c] - mu) * rs * gamma[c];
      yr[c] = beta != nullptr ? v + beta[c] : v;
    }
    if (lane == 0) {
      if (mean != nullptr) mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// dx = rstd (g - a - xhat b), g = dy gamma, xhat = (x - mean) rstd; LayerNorm: a = mean(g),
// b = mean(g xhat); RMSNorm (mean == nullptr): a = 0, b = mean(g xhat).
__global__ void normBackwardDxKernel(const float* x, const float* gamma, const float* mean,
                                     const float* rstd, const float* dy, int64_t rows, int dim,
                                     float invDim, float* dx) {
  DDP_WARP_PER_ROW(r, lane, rows) {
    const float* xr = x + r * dim;
    const float* dyr = dy + r * dim;
    const float mu = mean != nullptr ? mean[r] : 0.f, rs = rstd[r];
    float sumG = 0.f, sumGx = 0.f;
    for (int c = lane; c < dim; c += kWarp) {
      const float g = dyr[c] * gamma[c];
      sumG += g;
      sumGx += g * ((xr[c] - mu) * rs);
    }
    const float a = mean != nullptr ? warpSum(sumG) * invDim : 0.f;
    const float b = warpSum(sumGx) * invDim;
    for (int c = lane; c < dim; c += kWarp) {
      dx[r * dim + c] = rs * (dyr[c] * gamma[c] - a - ((xr[c] - mu) * rs) * b);
    }
  }
}

// Note [Norm parameter gradients]: dgamma[c] = sum_r dy[r][c] xhat[r][c] (and dbeta the sum of
// dy) is a column sum over every row: a thread per column summing all rows in order leaves most
// of the GPU idle. Stage one sums chunks of kNormRowsPerChunk rows per (chunk, column) into the
// workspace, stage two sums the chunks in order per column: a fixed order, so deterministic.
__global__ void normParamPartialKernel(const float* x, const float* mean, const float* rstd,
                                       const float* dy, int rows, int dim, int rowsPerChunk,
                                       float* partialGamma, float* partialBeta) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= dim) return;
  const int r0 = blockIdx.y * rowsPerChunk;
  const int r1 = min(rows, r0 + rowsPerChunk);
  float sg = 0.f, sb = 0.f;
  for (int r = r0; r < r1; ++r) {
    const float d = dy[int64_t{r} * dim + c];
    const float mu = mean != nullptr ? mean[r] : 0.f;
    sg += d * ((x[int64_t{r} * dim + c] - mu) * rstd[r]);
    sb += d;
  }
  partialGamma[int64_t{blockIdx.y} * dim + c] = sg;
  if (partialBeta != nullptr) partialBeta[int64_t{blockIdx.y} * dim + c] = sb;
}

__global__ void normParamReduceKernel(const float* partial, int chunks, int dim, float* out, bool acc) {
  DDP_GRID_STRIDE(c, int64_t{dim}) {
    float s = 0.f;
    for (int k = 0; k < chunks; ++k) s += partial[int64_t{k} * dim + c];
    out[c] = acc ? out[c] + s : s;
  }
}

int normRowsPerChunk(int rows) {
  // gridDim.y is at most 65535.
  return rows / kNormRowsPerChunk < 65535 ? kNormRowsPerChunk : (rows + 65534) / 65535;
}
int normChunks(int rows) { return (rows + normRowsPerChunk(rows) - 1) / normRowsPerChunk(rows); }

Status normParamGrads(cudaStream_t stream, const float* x, const float* mean, const float* rstd,
                      const float* dy, int rows, int dim, float* dgamma, float* dbeta, bool acc,
                      void* workspace) {
  const int chunks = normChunks(rows);
  float* partialGamma = static_cast<float*>(workspace);
  float* partialBeta = dbeta != nullptr ? partialGamma + int64_t{chunks} * dim : nullptr;
  const dim3 grid((dim + kThreads - 1) / kThreads, chunks);
  normParamPartialKernel<<<grid, kThreads, 0, stream>>>(x, mean, rstd, dy, rows, dim,
                                                        normRowsPerChunk(rows), partialGamma, partialBeta);
  normParamReduceKernel<<<blocksFor(dim), kThreads, 0, stream>>>(partialGamma, chunks, dim, dgamma, acc);
  if (dbeta != nullptr) {
    normParamReduceKernel<<<blocksFor(dim), kThreads, 0, stream>>>(partialBeta, chunks, dim, dbeta, acc);
  }
  return launchStatus("norm parameter gradient kernels");
}

__global__ void ropeTableKernel(int seq, int half, int headDim, double base, float* cosines, float* sines) {
  DDP_GRID_STRIDE(e, int64_t{seq} * half) {
    const int pos = static_cast<int>(e / half), i = static_cast<int>(e % half);
    const double theta = pow(base, -2.0 * i / headDim);
    const double angle = pos * theta;
    cosines[e] = static_cast<float>(cos(angle));
    sines[e] = static_cast<float>(sin(angle));
  }
}

__global__ void ropeApplyKernel(float* qkv, int64_t rowsTimesHeads2, int seq, int heads, int headDim,
                                const float* cosines, const float* sines, float sign) {
  const int half = headDim / 2;
  DDP_GRID_STRIDE(e, rowsTimesHeads2 * half) {
    const int i = static_cast<int>(e % half);
    const int64_t rh = e / half;  // row * (2 heads) + head among q and k heads
    const int64_t r = rh / (2 * heads);
    float* x = qkv + r * 3 * heads * headDim + (rh % (2 * heads)) * headDim;
    const int64_t t = (r % seq) * half + i;
    const float c = cosines[t], s = sign * sines[t];
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * c - b * s;
    x[2 * i + 1] = a * s + b * c;
  }
}

__global__ void addInPlaceKernel(float* y, const float* x, int64_t n) {
  DDP_GRID_STRIDE(i, n) { y[i] += x[i]; }
}

// One block per row. Max and argmax (ties to the lowest index), sum of exp, then the row is
// overwritten with scale (softmax - onehot). Every thread takes the same branches per row, so
// the __syncthreads inside are reached by the whole block.
__global__ void crossEntropyKernel(float* logits, const int32_t* labels, int rows, int classes,
                                   float scale, float* rowLoss, int32_t* rowCorrect) {
  __shared__ float value[kThreads];
  __shared__ int index[kThreads];
  const int t = threadIdx.x;
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float* z = logits + int64_t{r} * classes;
    const int32_t label = labels[r];
    if (label < 0) {
      for (int c = t; c < classes; c += blockDim.x) z[c] = 0.f;
      if (t == 0) {
        rowLoss[r] = 0.f;
        rowCorrect[r] = 0;
      }
      continue;
    }
    float best = -INFINITY;
    int bestIndex = INT_MAX;  // ties, and threads without a column, lose to lower indices
    for (int c = t; c < classes; c += blockDim.x) {
      if (z[c] > best || bestIndex == INT_MAX) {
        best = z[c];
        bestIndex = c;
      }
    }
    value[t] = best;
    index[t] = bestIndex;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (t < stride) {
        const float v = value[t + stride];
        const int k = index[t + stride];
        if (v > value[t] || (v == value[t] && k < index[t])) {
          value[t] = v;
          index[t] = k;
        }
      }
      __syncthreads();
    }
    const float mx = value[0];
    const int arg = index[0];
    const float zLabel = z[label];
    __syncthreads();  // value[] is reused below
    float s = 0.f;
    for (int c = t; c < classes; c += blockDim.x) s += expf(z[c] - mx);
    value[t] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (t < stride) value[t] += value[t + stride];
      __syncthreads();
    }
    const float sum = value[0];
    const float f = scale / sum;
    for (int c = t; c < classes; c += blockDim.x) {
      z[c] = expf(z[c] - mx) * f - (c == label ? scale : 0.f);
    }
    if (t == 0) {
      rowLoss[r] = (mx - zLabel) + logf(sum);
      rowCorrect[r] = arg == label ? 1 : 0;
    }
    __syncthreads();  // before the next row reuses value[]
  }
}

__global__ void dropoutKernel(const float* x, float* y, int64_t n, float p, float scale, uint64_t seed) {
  DDP_GRID_STRIDE(i, n) {
    y[i] = dropoutUniform(seed, static_cast<uint64_t>(i)) >= p ? x[i] * scale : 0.f;
  }
}

}  // namespace

Status embeddingForward(cudaStream_t stream, const int32_t* ids, int n, const float* table, int dim,
                        float* out, bool accumulate) {
  const int64_t total = int64_t{n} * dim;
  if (total <= 0) return Status::ok();
  embeddingForwardKernel<<<blocksFor(total), kThreads, 0, stream>>>(ids, n, table, dim, out, accumulate);
  return launchStatus("embeddingForward kernel");
}

size_t embeddingBackwardWorkspaceBytes(int n, int vocab) {
  if (n <= 0) return 0;
  return 3 * alignUp(sizeof(int32_t) * n) + alignUp(sortTempBytes(n, vocab));
}

Status embeddingBackward(cudaStream_t stream, const int32_t* ids, int n, const float* dout, int dim,
                         int vocab, float* dtable, bool accumulate, void* workspace) {
  if (!accumulate && int64_t{vocab} * dim > 0) {
    DDP_RETURN_IF_ERROR(cudaStatus(
        cudaMemsetAsync(dtable, 0, sizeof(float) * int64_t{vocab} * dim, stream), "embeddingBackward memset"));
  }
  if (n <= 0 || dim <= 0) return Status::ok();
  char* w = static_cast<char*>(workspace);
  auto* keys = reinterpret_cast<int32_t*>(w);
  auto* positionsIn = reinterpret_cast<int32_t*>(w + alignUp(sizeof(int32_t) * n));
  auto* positions = reinterpret_cast<int32_t*>(w + 2 * alignUp(sizeof(int32_t) * n));
  void* temp = w + 3 * alignUp(sizeof(int32_t) * n);
  size_t tempBytes = sortTempBytes(n, vocab);
  iotaKernel<<<blocksFor(n), kThreads, 0, stream>>>(positionsIn, n);
  DDP_RETURN_IF_ERROR(launchStatus("embeddingBackward iota kernel"));
  DDP_RETURN_IF_ERROR(cudaStatus(cub::DeviceRadixSort::SortPairs(temp, tempBytes, ids, keys, positionsIn,
                                                                 positions, n, 0, keyBits(vocab), stream),
                                 "embeddingBackward radix sort"));
  embeddingSegmentKernel<<<n < 65535 ? n : 65535, 128, 0, stream>>>(keys, positions, n, dout, dim, vocab, dtable);
  return launchStatus("embeddingBackward segment kernel");
}

Status layerNormForward(cudaStream_t stream, const float* x, const float* gamma, const float* beta,
                        int rows, int dim, float eps, float* y, float* mean, float* rstd) {
  if (rows <= 0 || dim <= 0) return Status::ok();
  normForwardKernel<<<warpBlocksFor(rows), kThreads, 0, stream>>>(x, gamma, beta, rows, dim, eps, y, mean, rstd);
  return launchStatus("layerNormForward kernel");
}

size_t normBackwardWorkspaceBytes(int rows, int dim) {
  if (rows <= 0 || dim <= 0) return 0;
  return alignUp(2 * sizeof(float) * int64_t{normChunks(rows)} * dim);
}

Status layerNormBackward(cudaStream_t stream, const float* x, const float* gamma, const float* mean,
                         const float* rstd, const float* dy, int rows, int dim, float* dx, float* dgamma,
                         float* dbeta, bool accumulateParams, void* workspace) {
  if (dim <= 0) return Status::ok();
  if (rows <= 0) {
    if (accumulateParams) return Status::ok();
    DDP_RETURN_IF_ERROR(cudaStatus(cudaMemsetAsync(dgamma, 0, sizeof(float) * dim, stream), "memset"));
    return cudaStatus(cudaMemsetAsync(dbeta, 0, sizeof(float) * dim, stream), "memset");
  }
  normBackwardDxKernel<<<warpBlocksFor(rows), kThreads, 0, stream>>>(x, gamma, mean, rstd, dy, rows, dim,
                                                                     1.f / static_cast<float>(dim), dx);
  DDP_RETURN_IF_ERROR(launchStatus("layerNormBackward dx kernel"));
  return normParamGrads(stream, x, mean, rstd, dy, rows, dim, dgamma, dbeta, accumulateParams, workspace);
}

Status rmsNormForward(cudaStream_t stream, const float* x, const float* gamma, int rows, int dim, float eps,
                      float* y, float* rstd) {
  if (rows <= 0 || dim <= 0) return Status::ok();
  normForwardKernel<<<warpBlocksFor(rows), kThreads, 0, stream>>>(x, gamma, nullptr, rows, dim, eps, y, nullptr,
                                                                  rstd);
  return launchStatus("rmsNormForward kernel");
}

Status rmsNormBackward(cudaStream_t stream, const float* x, const float* gamma, const float* rstd,
                       const float* dy, int rows, int dim, float* dx, float* dgamma, bool accumulateParams,
                       void* workspace) {
  if (dim <= 0) return Status::ok();
  if (rows <= 0) {
    if (accumulateParams) return Status::ok();
    return cudaStatus(cudaMemsetAsync(dgamma, 0, sizeof(float) * dim, stream), "memset");
  }
  normBackwardDxKernel<<<warpBlocksFor(rows), kThreads, 0, stream>>>(x, gamma, nullptr, rstd, dy, rows, dim,
                                                                     1.f / static_cast<float>(dim), dx);
  DDP_RETURN_IF_ERROR(launchStatus("rmsNormBackward dx kernel"));
  return normParamGrads(stream, x, nullptr, rstd, dy, rows, dim, dgamma, nullptr, accumulateParams, workspace);
}

size_t ropeWorkspaceBytes(int seq, int headDim) {
  if (seq <= 0 || headDim < 2) return 0;
  return 2 * alignUp(sizeof(float) * int64_t{seq} * (headDim / 2));
}

Status rope(cudaStream_t stream, float* qkv, int batch, int seq, int heads, int headDim, float base, float sign,
            void* workspace) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || headDim < 2) return Status::ok();
  const int half = headDim / 2;
  auto* cosines = static_cast<float*>(workspace);
  auto* sines = reinterpret_cast<float*>(static_cast<char*>(workspace) + alignUp(sizeof(float) * int64_t{seq} * half));
  ropeTableKernel<<<blocksFor(int64_t{seq} * half), kThreads, 0, stream>>>(seq, half, headDim, base, cosines, sines);
  DDP_RETURN_IF_ERROR(launchStatus("rope table kernel"));
  const int64_t pairsRows = int64_t{batch} * seq * 2 * heads;
  ropeApplyKernel<<<blocksFor(pairsRows * half), kThreads, 0, stream>>>(qkv, pairsRows, seq, heads, headDim,
                                                                        cosines, sines, sign);
  return launchStatus("rope kernel");
}

Status addInPlace(cudaStream_t stream, float* y, const float* x, size_t n) {
  if (n == 0) return Status::ok();
  addInPlaceKernel<<<blocksFor(static_cast<int64_t>(n)), kThreads, 0, stream>>>(y, x, static_cast<int64_t>(n));
  return launchStatus("addInPlace kernel");
}

Status crossEntropyInPlace(cudaStream_t stream, float* logits, const int32_t* labels, int rows, int classes,
                           float scale, float* rowLoss, int32_t* rowCorrect) {
  if (rows <= 0 || classes <= 0) return Status::ok();
  crossEntropyKernel<<<rows < 65535 ? rows : 65535, kThreads, 0, stream>>>(logits, labels, rows, classes, scale,
                                                                          rowLoss, rowCorrect);
  return launchStatus("crossEntropy kernel");
}

Status dropout(cudaStream_t stream, const float* x, float* y, size_t n, float p, uint64_t seed) {
  if (n == 0) return Status::ok();
  if (p <= 0.f) {
    if (x == y) return Status::ok();
    return cudaStatus(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "dropout copy");
  }
  const auto count = static_cast<int64_t>(n);
  dropoutKernel<<<blocksFor(count), kThreads, 0, stream>>>(x, y, count, p, dropoutScale(p), seed);
  return launchStatus("dropout kernel");
}

}  // namespace ddp::kernels::transformer::cuda
