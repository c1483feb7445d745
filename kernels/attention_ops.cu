// CUDA causal attention of kernels/transformer_ops_cuda.h, fp32 and with bf16 matmuls (Note
// [bf16 matmuls] in kernels/bf16_ops.h): cuBLAS strided-batched GEMMs plus masked-softmax
// kernels, one warp per row (fixed reduction trees: deterministic). One templated body serves
// both precisions; the fp32 one multiplies the tensors themselves with cublasSgemmStridedBatched,
// the bf16 one casts each operand into the workspace and calls cublasGemmStridedBatchedEx.
#include <cuda_bf16.h>

#include <cfloat>
#include <cmath>
#include <type_traits>

#include "kernels/cast_ops_cuda.h"
#include "kernels/cuda_launch.h"
#include "kernels/cuda_warp.h"
#include "kernels/transformer_ops_cuda.h"

namespace ddp::kernels::transformer::cuda {
namespace {

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

}  // namespace ddp::kernels::transformer::cuda
