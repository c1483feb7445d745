// CUDA versions of the transformer ops (kernels/transformer_ops_cuda.h): one warp per row for
// the row-wise ops, one block per row for the cross-entropy over a vocabulary, cuBLAS
// strided-batched GEMMs plus masked-softmax kernels for the attention, a stable radix sort for
// the embedding gradient. Reductions use fixed trees (no float atomics): deterministic.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/cast_ops_cuda.h"
#include "kernels/cuda_launch.h"
#include "kernels/transformer_ops.h"
#include "kernels/transformer_ops_cuda.h"

namespace ddp::kernels::transformer::cuda {
namespace {

constexpr int kWarp = 32;
// Rows per partial sum of the norm parameter gradients (Note [Norm parameter gradients]).
constexpr int kNormRowsPerChunk = 64;

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Blocks for one warp per row, capped for the grid-stride loop over rows.
int warpBlocksFor(int64_t rows) { return blocksFor(rows * kWarp); }

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

// ---- attention ----

// In place over rows of length seq (row r at position i = r % seq): softmax over j <= i, 0 after.
__global__ void causalSoftmaxKernel(float* probs, int64_t rows, int seq) {
  DDP_WARP_PER_ROW(r, lane, rows) {
    float* row = probs + r * seq;
    const int len = static_cast<int>(r % seq) + 1;
    float mx = -FLT_MAX;
    for (int j = lane; j < len; j += kWarp) mx = fmaxf(mx, row[j]);
    mx = warpMax(mx);
    float s = 0.f;
    for (int j = lane; j < len; j += kWarp) {
      const float e = expf(row[j] - mx);
      row[j] = e;
      s += e;
    }
    const float inv = 1.f / warpSum(s);
    for (int j = lane; j < seq; j += kWarp) row[j] = j < len ? row[j] * inv : 0.f;
  }
}

// ds (count x seq x seq, contiguous) holds dP; becomes dS = P (dP - <P, dP>) over j <= i, 0 after.
// Row r of ds is row i = r % seq of head slice r / seq, whose probs start at probs + slice * stride.
__global__ void causalSoftmaxBackwardKernel(const float* probs, int64_t probsStride, float* ds,
                                            int64_t rows, int seq) {
  DDP_WARP_PER_ROW(r, lane, rows) {
    const int i = static_cast<int>(r % seq);
    const float* p = probs + (r / seq) * probsStride + int64_t{i} * seq;
    float* d = ds + r * seq;
    float dot = 0.f;
    for (int j = lane; j <= i; j += kWarp) dot += p[j] * d[j];
    dot = warpSum(dot);
    for (int j = lane; j < seq; j += kWarp) d[j] = j <= i ? p[j] * (d[j] - dot) : 0.f;
  }
}

// Row-major strided-batched C = alpha op(A) op(B) + beta C (cuBLAS is column-major: C^T = op(B)^T
// op(A)^T).
cublasStatus_t gemmBatched(cublasHandle_t blas, bool ta, bool tb, int m, int n, int k, float alpha,
                           const float* a, int lda, int64_t strideA, const float* b, int ldb,
                           int64_t strideB, float beta, float* c, int ldc, int64_t strideC, int count) {
  return cublasSgemmStridedBatched(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   n, m, k, &alpha, b, ldb, strideB, a, lda, strideA, &beta, c, ldc,
                                   strideC, count);
}
// The same on bf16 operands with fp32 accumulation and an fp32 C (Note [bf16 matmuls]).
cublasStatus_t gemmBatched(cublasHandle_t blas, bool ta, bool tb, int m, int n, int k, float alpha,
                           const __nv_bfloat16* a, int lda, int64_t strideA, const __nv_bfloat16* b, int ldb,
                           int64_t strideB, float beta, float* c, int ldc, int64_t strideC, int count) {
  return cublasGemmStridedBatchedEx(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                                    &alpha, b, CUDA_R_16BF, ldb, strideB, a, CUDA_R_16BF, lda, strideA, &beta, c,
                                    CUDA_R_32F, ldc, strideC, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
template <typename T>
constexpr const char* kGemmName = "attention cublasSgemmStridedBatched";
template <>
constexpr const char* kGemmName<__nv_bfloat16> = "attention cublasGemmStridedBatchedEx (bf16 operands)";

// A GEMM operand of element type T made from the fp32 tensor x (n elements): x itself for
// float; for bf16 its copy, cast into `copy` on the stream.
Status asOperand(cudaStream_t, const float* x, int64_t, float*, const float** out) {
  *out = x;
  return Status::ok();
}
Status asOperand(cudaStream_t stream, const float* x, int64_t n, __nv_bfloat16* copy, const __nv_bfloat16** out) {
  *out = copy;
  return ::ddp::kernels::cuda::castToBf16Async(stream, x, copy, static_cast<size_t>(n));
}

// Carves consecutive 256-byte aligned arrays out of a workspace. copy<T> is the bf16 copy of an
// operand, nullptr for T = float (the fp32 products read the tensors themselves).
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base) : next_(static_cast<char*>(base)) {}
  template <typename T>
  T* copy(int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      return nullptr;
    } else {
      T* p = reinterpret_cast<T*>(next_);
      next_ += alignUp(sizeof(T) * static_cast<size_t>(n));
      return p;
    }
  }

 private:
  char* next_;
};

// Note [CUDA attention batching]: head slices of qkv are a constant stride apart along heads
// (headDim) and along the batch (seq * 3 * heads * headDim) but not both, so one strided-batched
// GEMM covers the inner of the two and a host loop walks the outer; the inner is the larger one
// (fewer, bigger launches). The backward's dP/dS scratch holds one outer step: inner x seq x seq.
struct AttentionPlan {
  int outer, inner;
  int64_t qkvOuter, qkvInner, outOuter, outInner, probsOuter, probsInner;
  AttentionPlan(int batch, int seq, int heads, int headDim) {
    const int64_t hd = int64_t{heads} * headDim, tt = int64_t{seq} * seq;
    const bool innerIsHeads = heads >= batch;
    outer = innerIsHeads ? batch : heads;
    inner = innerIsHeads ? heads : batch;
    const int64_t qkvB = int64_t{seq} * 3 * hd, outB = int64_t{seq} * hd, probsB = heads * tt;
    qkvOuter = innerIsHeads ? qkvB : headDim;
    qkvInner = innerIsHeads ? headDim : qkvB;
    outOuter = innerIsHeads ? outB : headDim;
    outInner = innerIsHeads ? headDim : outB;
    probsOuter = innerIsHeads ? probsB : tt;
    probsInner = innerIsHeads ? tt : probsB;
  }
};

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

namespace {

// The attention's products with operands of type T (float: the fp32 path; __nv_bfloat16: Note
// [bf16 matmuls], every operand cast from its fp32 tensor into the workspace first).
template <typename T>
Status attentionForward(cudaStream_t stream, cublasHandle_t blas, const float* qkv, int batch, int seq, int heads,
                        int headDim, float* out, float* probs, void* workspace) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || headDim <= 0) return Status::ok();
  const AttentionPlan pl(batch, seq, heads, headDim);
  const int ld = 3 * heads * headDim, ldo = heads * headDim;
  const int64_t rows = int64_t{batch} * seq, probsCount = int64_t{batch} * heads * seq * seq;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  WorkspaceCarver ws(workspace);
  T* qkvCopy = ws.copy<T>(rows * ld);
  T* probsCopy = ws.copy<T>(probsCount);
  const T* x = nullptr;
  const T* p = nullptr;
  DDP_RETURN_IF_ERROR(asOperand(stream, qkv, rows * ld, qkvCopy, &x));
  for (int o = 0; o < pl.outer; ++o) {  // S = scale Q K^T
    const T* q = x + o * pl.qkvOuter;
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, false, true, seq, seq, headDim, scale, q, ld, pl.qkvInner,
                                               q + ldo, ld, pl.qkvInner, 0.f, probs + o * pl.probsOuter, seq,
                                               pl.probsInner, pl.inner),
                                   kGemmName<T>));
  }
  const int64_t probRows = int64_t{batch} * heads * seq;
  causalSoftmaxKernel<<<warpBlocksFor(probRows), kThreads, 0, stream>>>(probs, probRows, seq);
  DDP_RETURN_IF_ERROR(launchStatus("attention softmax kernel"));
  DDP_RETURN_IF_ERROR(asOperand(stream, probs, probsCount, probsCopy, &p));
  for (int o = 0; o < pl.outer; ++o) {  // O = P V
    const T* v = x + o * pl.qkvOuter + 2 * ldo;
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, false, false, seq, headDim, seq, 1.f, p + o * pl.probsOuter,
                                               seq, pl.probsInner, v, ld, pl.qkvInner, 0.f, out + o * pl.outOuter,
                                               ldo, pl.outInner, pl.inner),
                                   kGemmName<T>));
  }
  return Status::ok();
}

template <typename T>
Status attentionBackward(cudaStream_t stream, cublasHandle_t blas, const float* qkv, const float* probs,
                         const float* dout, int batch, int seq, int heads, int headDim, float* dqkv, void* workspace) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || headDim <= 0) return Status::ok();
  const AttentionPlan pl(batch, seq, heads, headDim);
  const int ld = 3 * heads * headDim, ldo = heads * headDim;
  const int64_t tt = int64_t{seq} * seq, rows = int64_t{batch} * seq;
  const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
  // The fp32 dP/dS scratch of one outer step first (causalAttentionBackwardWorkspaceBytes), then
  // the bf16 copies.
  float* ds = static_cast<float*>(workspace);
  WorkspaceCarver ws(static_cast<char*>(workspace) + causalAttentionBackwardWorkspaceBytes(batch, seq, heads));
  T* qkvCopy = ws.copy<T>(rows * ld);
  T* probsCopy = ws.copy<T>(int64_t{batch} * heads * tt);
  T* doutCopy = ws.copy<T>(rows * ldo);
  T* dsCopy = ws.copy<T>(int64_t{pl.inner} * tt);
  const T *x = nullptr, *pAll = nullptr, *dOAll = nullptr, *dsOp = nullptr;
  DDP_RETURN_IF_ERROR(asOperand(stream, qkv, rows * ld, qkvCopy, &x));
  DDP_RETURN_IF_ERROR(asOperand(stream, probs, int64_t{batch} * heads * tt, probsCopy, &pAll));
  DDP_RETURN_IF_ERROR(asOperand(stream, dout, rows * ldo, doutCopy, &dOAll));
  const char* what = kGemmName<T>;
  for (int o = 0; o < pl.outer; ++o) {
    const T* q = x + o * pl.qkvOuter;
    const T* k = q + ldo;
    const T* v = q + 2 * ldo;
    const T* p = pAll + o * pl.probsOuter;
    const T* dO = dOAll + o * pl.outOuter;
    float* dq = dqkv + o * pl.qkvOuter;
    // dV = P^T dO; dP = dO V^T; dS = P (dP - <P, dP>) (fp32 P); dQ = scale dS K; dK = scale dS^T Q.
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, true, false, seq, headDim, seq, 1.f, p, seq, pl.probsInner,
                                               dO, ldo, pl.outInner, 0.f, dq + 2 * ldo, ld, pl.qkvInner, pl.inner),
                                   what));
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, false, true, seq, seq, headDim, 1.f, dO, ldo, pl.outInner, v,
                                               ld, pl.qkvInner, 0.f, ds, seq, tt, pl.inner),
                                   what));
    const int64_t dsRows = int64_t{pl.inner} * seq;
    causalSoftmaxBackwardKernel<<<warpBlocksFor(dsRows), kThreads, 0, stream>>>(probs + o * pl.probsOuter,
                                                                                pl.probsInner, ds, dsRows, seq);
    DDP_RETURN_IF_ERROR(launchStatus("attention softmax backward kernel"));
    DDP_RETURN_IF_ERROR(asOperand(stream, ds, dsRows * seq, dsCopy, &dsOp));
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, false, false, seq, headDim, seq, scale, dsOp, seq, tt, k, ld,
                                               pl.qkvInner, 0.f, dq, ld, pl.qkvInner, pl.inner),
                                   what));
    DDP_RETURN_IF_ERROR(blasStatus(gemmBatched(blas, true, false, seq, headDim, seq, scale, dsOp, seq, tt, q, ld,
                                               pl.qkvInner, 0.f, dq + ldo, ld, pl.qkvInner, pl.inner),
                                   what));
  }
  return Status::ok();
}

size_t bf16Bytes(int64_t n) { return alignUp(2 * static_cast<size_t>(n)); }

}  // namespace

Status causalAttentionForward(cudaStream_t stream, cublasHandle_t blas, const float* qkv, int batch, int seq,
                              int heads, int headDim, float* out, float* probs) {
  return attentionForward<float>(stream, blas, qkv, batch, seq, heads, headDim, out, probs, nullptr);
}

size_t causalAttentionBackwardWorkspaceBytes(int batch, int seq, int heads) {
  if (batch <= 0 || seq <= 0 || heads <= 0) return 0;
  return alignUp(sizeof(float) * int64_t{batch > heads ? batch : heads} * seq * seq);
}

Status causalAttentionBackward(cudaStream_t stream, cublasHandle_t blas, const float* qkv, const float* probs,
                               const float* dout, int batch, int seq, int heads, int headDim, float* dqkv,
                               void* workspace) {
  return attentionBackward<float>(stream, blas, qkv, probs, dout, batch, seq, heads, headDim, dqkv, workspace);
}

size_t causalAttentionForwardBf16WorkspaceBytes(int batch, int seq, int heads, int headDim) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || headDim <= 0) return 0;
  return bf16Bytes(int64_t{batch} * seq * 3 * heads * headDim) + bf16Bytes(int64_t{batch} * heads * seq * seq);
}

Status causalAttentionForwardBf16(cudaStream_t stream, cublasHandle_t blas, const float* qkv, int batch, int seq,
                                  int heads, int headDim, float* out, float* probs, void* workspace) {
  return attentionForward<__nv_bfloat16>(stream, blas, qkv, batch, seq, heads, headDim, out, probs, workspace);
}

size_t causalAttentionBackwardBf16WorkspaceBytes(int batch, int seq, int heads, int headDim) {
  if (batch <= 0 || seq <= 0 || heads <= 0 || headDim <= 0) return 0;
  const int64_t rows = int64_t{batch} * seq, hd = int64_t{heads} * headDim, tt = int64_t{seq} * seq;
  return causalAttentionBackwardWorkspaceBytes(batch, seq, heads) + bf16Bytes(rows * 3 * hd) +
         bf16Bytes(int64_t{batch} * heads * tt) + bf16Bytes(rows * hd) +
         bf16Bytes(int64_t{batch > heads ? batch : heads} * tt);
}

Status causalAttentionBackwardBf16(cudaStream_t stream, cublasHandle_t blas, const float* qkv, const float* probs,
                                   const float* dout, int batch, int seq, int heads, int headDim, float* dqkv,
                                   void* workspace) {
  return attentionBackward<__nv_bfloat16>(stream, blas, qkv, probs, dout, batch, seq, heads, headDim, dqkv,
                                          workspace);
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
