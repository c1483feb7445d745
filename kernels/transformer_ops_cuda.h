#pragma once
// CUDA launchers behind the transformer methods of CudaLayerOps (kernels/layer_ops.cu), built
// only with DDP_WITH_CUDA and included only by .cu files. Arguments and contracts are those of
// kernels/transformer_ops.h / LayerOps. Each launcher queues its work on `stream` (cuBLAS calls
// on `blas`, already bound to that stream), never synchronizes, never allocates, and returns an
// internal error naming the failed call. Ops that need scratch memory take `workspace`, device
// memory of at least the bytes their *WorkspaceBytes function names (256-byte aligned), owned
// by the caller and not touched by anything else until the queued work is done.
// Determinism: every kernel reduces in a fixed order (no atomics on floats), so a call gives the
// same bits on every run; they match the CPU twins up to float rounding order (embedding
// backward and dropout match bit for bit), see tests/kernels/transformer_ops_cuda_test.cc.
// Thread model: stateless.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace ddp::kernels::transformer::cuda {

Status embeddingForward(cudaStream_t stream, const int32_t* ids, int n, const float* table, int dim,
                        float* out, bool accumulate);
size_t embeddingBackwardWorkspaceBytes(int n, int vocab);
Status embeddingBackward(cudaStream_t stream, const int32_t* ids, int n, const float* dout, int dim,
                         int vocab, float* dtable, bool accumulate, void* workspace);

Status layerNormForward(cudaStream_t stream, const float* x, const float* gamma, const float* beta,
                        int rows, int dim, float eps, float* y, float* mean, float* rstd);
// Also the size for rmsNormBackward.
size_t normBackwardWorkspaceBytes(int rows, int dim);
Status layerNormBackward(cudaStream_t stream, const float* x, const float* gamma, const float* mean,
                         const float* rstd, const float* dy, int rows, int dim, float* dx,
                         float* dgamma, float* dbeta, bool accumulateParams, void* workspace);
Status rmsNormForward(cudaStream_t stream, const float* x, const float* gamma, int rows, int dim,
                      float eps, float* y, float* rstd);
Status rmsNormBackward(cudaStream_t stream, const float* x, const float* gamma, const float* rstd,
                       const float* dy, int rows, int dim, float* dx, float* dgamma,
                       bool accumulateParams, void* workspace);

Status causalAttentionForward(cudaStream_t stream, cublasHandle_t blas, const float* qkv, int batch,
                              int seq, int heads, int headDim, float* out, float* probs);
size_t causalAttentionBackwardWorkspaceBytes(int batch, int seq, int heads);
Status causalAttentionBackward(cudaStream_t stream, cublasHandle_t blas, const float* qkv,
                               const float* probs, const float* dout, int batch, int seq, int heads,
                               int headDim, float* dqkv, void* workspace);

// The bf16 matmul versions (Note [bf16 matmuls] in kernels/bf16_ops.h): the same products on
// bf16 copies of qkv, probs, dout and dS, made in the workspace.
size_t causalAttentionForwardBf16WorkspaceBytes(int batch, int seq, int heads, int headDim);
Status causalAttentionForwardBf16(cudaStream_t stream, cublasHandle_t blas, const float* qkv,
                                  int batch, int seq, int heads, int headDim, float* out,
                                  float* probs, void* workspace);
size_t causalAttentionBackwardBf16WorkspaceBytes(int batch, int seq, int heads, int headDim);
Status causalAttentionBackwardBf16(cudaStream_t stream, cublasHandle_t blas, const float* qkv,
                                   const float* probs, const float* dout, int batch, int seq,
                                   int heads, int headDim, float* dqkv, void* workspace);

size_t ropeWorkspaceBytes(int seq, int headDim);
// sign +1: forward (turn by +angle); -1: backward.
Status rope(cudaStream_t stream, float* qkv, int batch, int seq, int heads, int headDim, float base,
            float sign, void* workspace);

Status addInPlace(cudaStream_t stream, float* y, const float* x, size_t n);

Status crossEntropyInPlace(cudaStream_t stream, float* logits, const int32_t* labels, int rows,
                           int classes, float scale, float* rowLoss, int32_t* rowCorrect);

// Forward and backward are the same map (Note [Dropout mask]): y = mask * x / (1-p).
Status dropout(cudaStream_t stream, const float* x, float* y, size_t n, float p, uint64_t seed);

}  // namespace ddp::kernels::transformer::cuda
