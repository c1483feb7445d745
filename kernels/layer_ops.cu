// CUDA implementation of kernels/layer_ops.h: cuBLAS for GEMM, one small kernel per op.
// Every kernel is deterministic (gathers instead of atomics), so results do not depend on
// scheduling; they match the CPU twins up to float rounding (tests/kernels/layer_ops_cuda_test.cc).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <string>

#include "kernels/cast_ops_cuda.h"
#include "kernels/cuda_launch.h"
#include "kernels/layer_ops.h"
#include "kernels/transformer_ops_cuda.h"

namespace ddp::kernels {
namespace {

namespace tcuda = transformer::cuda;

__global__ void biasAddKernel(float* y, const float* b, int64_t rows, int cols) {
  DDP_GRID_STRIDE(i, rows * cols) { y[i] += b[i % cols]; }
}

__global__ void biasGradKernel(const float* dy, int rows, int cols, float* db, bool acc) {
  DDP_GRID_STRIDE(c, int64_t{cols}) {
    float s = 0.f;
    for (int r = 0; r < rows; ++r) s += dy[int64_t{r} * cols + c];
    db[c] = acc ? db[c] + s : s;
  }
}

// sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3): Note [Tanh GELU] in kernels/layer_ops.cc.
__device__ inline float geluTanhSigmoid(float x) {
  const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 1.f / (1.f + expf(-2.f * u));
}

__device__ inline float actForward(Activation a, float x) {
  switch (a) {
    case Activation::kRelu: return x > 0.f ? x : 0.f;
    case Activation::kTanh: return tanhf(x);
    case Activation::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh: return x * geluTanhSigmoid(x);
    case Activation::kSigmoid: return 1.f / (1.f + expf(-x));
    default: return x;
  }
}

__global__ void activationForwardKernel(Activation a, const float* x, float* y, int64_t n) {
  DDP_GRID_STRIDE(i, n) { y[i] = actForward(a, x[i]); }
}

__global__ void activationBackwardKernel(Activation a, const float* x, const float* y,
                                         const float* dy, float* dx, int64_t n) {
  DDP_GRID_STRIDE(i, n) {
    float g = dy[i];
    switch (a) {
      case Activation::kRelu: g = x[i] > 0.f ? g : 0.f; break;
      case Activation::kTanh: g = g * (1.f - y[i] * y[i]); break;
      case Activation::kGelu: {
        const float cdf = 0.5f * (1.f + erff(x[i] * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * expf(-0.5f * x[i] * x[i]);
        g = g * (cdf + x[i] * pdf);
        break;
      }
      case Activation::kGeluTanh: {
        const float s = geluTanhSigmoid(x[i]);
        const float du = 0.79788456080286536f * (1.f + 3.f * 0.044715f * x[i] * x[i]);
        g = g * (s + 2.f * x[i] * s * (1.f - s) * du);
        break;
      }
      case Activation::kSigmoid: g = g * (y[i] * (1.f - y[i])); break;
      default: break;
    }
    dx[i] = g;
  }
}

__global__ void channelBiasAddKernel(float* y, const float* b, int64_t total, int c, int64_t p) {
  DDP_GRID_STRIDE(i, total) { y[i] += b[(i / p) % c]; }
}

// One block per channel; fixed reduction tree (deterministic).
__global__ void channelBiasGradKernel(const float* dy, int n, int c, int64_t p, float* db, bool acc) {
  __shared__ float part[kThreads];
  const int ch = blockIdx.x;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < int64_t{n} * p; k += blockDim.x) {
    const int64_t img = k / p, j = k % p;
    s += dy[(img * c + ch) * p + j];
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[ch] = acc ? db[ch] + part[0] : part[0];
}

__global__ void im2colKernel(ConvGeometry g, const float* image, float* col) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t cols = int64_t{g.batch} * oh * ow;
  DDP_GRID_STRIDE(i, g.colRows() * cols) {
    const int64_t row = i / cols, column = i % cols;
    const int kj = static_cast<int>(row % g.kernelW);
    const int ki = static_cast<int>((row / g.kernelW) % g.kernelH);
    const int c = static_cast<int>(row / (int64_t{g.kernelW} * g.kernelH));
    const int n = static_cast<int>(column / (int64_t{oh} * ow));
    const int oy = static_cast<int>((column / ow) % oh), ox = static_cast<int>(column % ow);
    const int iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
    col[i] = (iy >= 0 && iy < g.height && ix >= 0 && ix < g.width)
                 ? image[((int64_t{n} * g.channels + c) * g.height + iy) * g.width + ix]
                 : 0.f;
  }
}

// Gather form of col2im: each image element sums the column entries that read it.
__global__ void col2imKernel(ConvGeometry g, const float* col, float* image) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t cols = int64_t{g.batch} * oh * ow;
  const int64_t total = int64_t{g.batch} * g.channels * g.height * g.width;
  DDP_GRID_STRIDE(i, total) {
    const int x = static_cast<int>(i % g.width);
    const int y = static_cast<int>((i / g.width) % g.height);
    const int c = static_cast<int>((i / (int64_t{g.width} * g.height)) % g.channels);
    const int n = static_cast<int>(i / (int64_t{g.width} * g.height * g.channels));
    float s = 0.f;
    for (int ki = 0; ki < g.kernelH; ++ki) {
      const int ty = y + g.pad - ki;
      if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= oh) continue;
      const int oy = ty / g.stride;
      for (int kj = 0; kj < g.kernelW; ++kj) {
        const int tx = x + g.pad - kj;
        if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= ow) continue;
        const int ox = tx / g.stride;
        const int64_t row = (int64_t{c} * g.kernelH + ki) * g.kernelW + kj;
        s += col[row * cols + (int64_t{n} * oh + oy) * ow + ox];
      }
    }
    image[i] = s;
  }
}

__global__ void swapLeadingDimsKernel(const float* x, int a, int b, int64_t p, float* y) {
  DDP_GRID_STRIDE(i, int64_t{a} * b * p) {
    const int64_t k = i % p, j = (i / p) % b, r = i / (p * b);
    y[(j * a + r) * p + k] = x[i];
  }
}

__global__ void maxPoolForwardKernel(ConvGeometry g, const float* x, float* y, int32_t* argmax) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t hw = int64_t{g.height} * g.width;
  DDP_GRID_STRIDE(i, int64_t{g.batch} * g.channels * oh * ow) {
    const int64_t pl = i / (int64_t{oh} * ow);
    const int oy = static_cast<int>((i / ow) % oh), ox = static_cast<int>(i % ow);
    const float* in = x + pl * hw;
    float best = -FLT_MAX;
    int32_t bestIdx = oy * g.stride * g.width + ox * g.stride;
    bool first = true;
    for (int ki = 0; ki < g.kernelH; ++ki) {
      for (int kj = 0; kj < g.kernelW; ++kj) {
        const int idx = (oy * g.stride + ki) * g.width + ox * g.stride + kj;
        if (first || in[idx] > best) {
          best = in[idx];
          bestIdx = idx;
          first = false;
        }
      }
    }
    y[i] = best;
    argmax[i] = bestIdx;
  }
}

// The output windows [oyLo, oyHi] x [oxLo, oxHi] that hold input element (y, x) of a pool.
__device__ inline void windowsHolding(const ConvGeometry& g, int y, int x, int* oyLo, int* oyHi, int* oxLo, int* oxHi) {
  *oyLo = y - g.kernelH + 1 > 0 ? (y - g.kernelH + 1 + g.stride - 1) / g.stride : 0;
  *oyHi = min(y / g.stride, g.outHeight() - 1);
  *oxLo = x - g.kernelW + 1 > 0 ? (x - g.kernelW + 1 + g.stride - 1) / g.stride : 0;
  *oxHi = min(x / g.stride, g.outWidth() - 1);
}

// Gather: each input element sums dy of the windows whose argmax it is.
__global__ void maxPoolBackwardKernel(ConvGeometry g, const float* dy, const int32_t* argmax, float* dx) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t hw = int64_t{g.height} * g.width;
  DDP_GRID_STRIDE(i, int64_t{g.batch} * g.channels * hw) {
    const int64_t pl = i / hw;
    const int idx = static_cast<int>(i % hw);
    int oyLo, oyHi, oxLo, oxHi;
    windowsHolding(g, idx / g.width, idx % g.width, &oyLo, &oyHi, &oxLo, &oxHi);
    float s = 0.f;
    for (int oy = oyLo; oy <= oyHi; ++oy) {
      for (int ox = oxLo; ox <= oxHi; ++ox) {
        const int64_t o = pl * oh * ow + int64_t{oy} * ow + ox;
        if (argmax[o] == idx) s += dy[o];
      }
    }
    dx[i] = s;
  }
}

// Average pooling and the mean squared error: the formulas and summation order of
// kernels/sequential_ops.cc.
__global__ void avgPoolForwardKernel(ConvGeometry g, const float* x, float* y) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t hw = int64_t{g.height} * g.width;
  const float inv = 1.f / static_cast<float>(g.kernelH * g.kernelW);
  DDP_GRID_STRIDE(i, int64_t{g.batch} * g.channels * oh * ow) {
    const int64_t pl = i / (int64_t{oh} * ow);
    const int oy = static_cast<int>((i / ow) % oh), ox = static_cast<int>(i % ow);
    const float* in = x + pl * hw;
    float s = 0.f;
    for (int ki = 0; ki < g.kernelH; ++ki) {
      const float* row = in + int64_t{oy * g.stride + ki} * g.width + ox * g.stride;
      for (int kj = 0; kj < g.kernelW; ++kj) s += row[kj];
    }
    y[i] = s * inv;
  }
}

__global__ void avgPoolBackwardKernel(ConvGeometry g, const float* dy, float* dx) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t hw = int64_t{g.height} * g.width;
  const float inv = 1.f / static_cast<float>(g.kernelH * g.kernelW);
  DDP_GRID_STRIDE(i, int64_t{g.batch} * g.channels * hw) {
    const int64_t pl = i / hw;
    const int idx = static_cast<int>(i % hw);
    int oyLo, oyHi, oxLo, oxHi;
    windowsHolding(g, idx / g.width, idx % g.width, &oyLo, &oyHi, &oxLo, &oxHi);
    const float* d = dy + pl * oh * ow;
    float s = 0.f;
    for (int oy = oyLo; oy <= oyHi; ++oy) {
      for (int ox = oxLo; ox <= oxHi; ++ox) s += d[oy * ow + ox];
    }
    dx[i] = s * inv;
  }
}

__global__ void meanSquaredErrorKernel(const float* pred, const float* target, int rows, int cols, float scale,
                                       float* rowLoss, float* dpred) {
  const float inv = 1.f / static_cast<float>(cols);
  DDP_GRID_STRIDE(r, int64_t{rows}) {
    const int64_t base = r * cols;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) {
      const float e = pred[base + c] - target[base + c];
      s += e * e;
      if (dpred != nullptr) dpred[base + c] = scale * 2.f * e * inv;
    }
    rowLoss[r] = s * inv;
  }
}

__global__ void softmaxCrossEntropyForwardKernel(const float* logits, const int32_t* labels, int rows,
                                                 int classes, float* probs, float* rowLoss,
                                                 int32_t* rowCorrect) {
  DDP_GRID_STRIDE(r, int64_t{rows}) {
    const float* z = logits + r * classes;
    float* p = probs + r * classes;
    float mx = z[0];
    int arg = 0;
    for (int c = 1; c < classes; ++c) {
      if (z[c] > mx) {
        mx = z[c];
        arg = c;
      }
    }
    float sum = 0.f;
    for (int c = 0; c < classes; ++c) {
      p[c] = expf(z[c] - mx);
      sum += p[c];
    }
    const float inv = 1.f / sum;
    for (int c = 0; c < classes; ++c) p[c] *= inv;
    const int y = labels[r];
    rowLoss[r] = (mx + logf(sum)) - z[y];
    rowCorrect[r] = arg == y ? 1 : 0;
  }
}

__global__ void softmaxCrossEntropyBackwardKernel(const float* probs, const int32_t* labels, int rows,
                                                  int classes, float scale, float* dlogits) {
  DDP_GRID_STRIDE(i, int64_t{rows} * classes) {
    const int64_t r = i / classes;
    const int c = static_cast<int>(i % classes);
    dlogits[i] = scale * (probs[i] - (labels[r] == c ? 1.f : 0.f));
  }
}

// Note [Sticky device errors] (kernels/layer_ops.h): the first failure is kept, later ops skip.
class CudaLayerOps final : public LayerOps {
 public:
  explicit CudaLayerOps(int index) : index_(index) {}
  ~CudaLayerOps() override {
    if (workspace_) {
      cudaStreamSynchronize(stream_);
      cudaFree(workspace_);
    }
    if (blas_) cublasDestroy(blas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status init() {
    check(cudaSetDevice(index_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (!ok()) return status_;
    checkBlas(cublasCreate(&blas_), "cublasCreate");
    if (ok()) checkBlas(cublasSetStream(blas_, stream_), "cublasSetStream");
    // Plain FP32 (no TF32): results stay comparable with the CPU twin.
    if (ok()) checkBlas(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return status_;
  }

  Device device() const override { return Device::cuda(index_); }
  Status status() const override { return status_; }
  Status synchronize() override {
    if (ok()) check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return status_;
  }

  void* allocate(size_t bytes, const char* what) override {
    if (!ok()) return nullptr;
    void* p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 1),
          ("cudaMalloc " + std::to_string(bytes) + " bytes" + (what != nullptr ? std::string(" for ") + what : "")).c_str());
    return ok() ? p : nullptr;
  }
  void release(void* p) override {
    if (p == nullptr) return;
    // Work queued on the stream may still read p: finish it first.
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }
  void copyToDevice(void* dst, const void* src, size_t bytes) override {
    if (ok() && bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "copy to device");
  }
  void copyToHost(void* dst, const void* src, size_t bytes) override {
    if (ok() && bytes) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "copy to host");
      (void)synchronize();
    }
  }
  void copyOnDevice(void* dst, const void* src, size_t bytes) override {
    if (ok() && bytes && dst != src) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "copy on device");
    }
  }
  void fillZero(void* p, size_t bytes) override {
    if (ok() && bytes) check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemset");
  }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, const float* b,
            float beta, float* c) override {
    if (!ok() || m == 0 || n == 0) return;
    // k == 0 gives C = beta * C, as on the CPU.
    // Row-major C (m x n) = op(A) op(B) is column-major C^T (n x m) = op(B)^T op(A)^T.
    checkBlas(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                          k, &alpha, b, tb ? k : n, a, ta ? m : k, &beta, c, n),
              "cublasSgemm");
  }
  void biasAdd(float* y, const float* bias, int rows, int cols) override {
    launch(biasAddKernel, int64_t{rows} * cols, y, bias, int64_t{rows}, cols);
  }
  void biasGrad(const float* dy, int rows, int cols, float* db, bool acc) override {
    launch(biasGradKernel, cols, dy, rows, cols, db, acc);
  }
  void activationForward(Activation a, const float* x, float* y, size_t n) override {
    launch(activationForwardKernel, static_cast<int64_t>(n), a, x, y, static_cast<int64_t>(n));
  }
  void activationBackward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                          size_t n) override {
    launch(activationBackwardKernel, static_cast<int64_t>(n), a, x, y, dy, dx, static_cast<int64_t>(n));
  }
  void channelBiasAdd(float* y, const float* bias, int n, int c, int64_t p) override {
    const int64_t total = int64_t{n} * c * p;
    launch(channelBiasAddKernel, total, y, bias, total, c, p);
  }
  void channelBiasGrad(const float* dy, int n, int c, int64_t p, float* db, bool acc) override {
    if (!ok() || c == 0) return;
    channelBiasGradKernel<<<c, kThreads, 0, stream_>>>(dy, n, c, p, db, acc);
    check(cudaGetLastError(), "channelBiasGrad launch");
  }
  void im2col(const ConvGeometry& g, const float* image, float* col) override {
    launch(im2colKernel, g.colRows() * g.colCols(), g, image, col);
  }
  void col2im(const ConvGeometry& g, const float* col, float* image) override {
    launch(col2imKernel, int64_t{g.batch} * g.channels * g.height * g.width, g, col, image);
  }
  void swapLeadingDims(const float* x, int a, int b, int64_t p, float* y) override {
    launch(swapLeadingDimsKernel, int64_t{a} * b * p, x, a, b, p, y);
  }
  void maxPoolForward(const ConvGeometry& g, const float* x, float* y, int32_t* am) override {
    launch(maxPoolForwardKernel, int64_t{g.batch} * g.channels * g.outHeight() * g.outWidth(), g, x, y, am);
  }
  void maxPoolBackward(const ConvGeometry& g, const float* dy, const int32_t* am, float* dx) override {
    launch(maxPoolBackwardKernel, int64_t{g.batch} * g.channels * g.height * g.width, g, dy, am, dx);
  }
  void avgPoolForward(const ConvGeometry& g, const float* x, float* y) override {
    launch(avgPoolForwardKernel, int64_t{g.batch} * g.channels * g.outHeight() * g.outWidth(), g, x, y);
  }
  void avgPoolBackward(const ConvGeometry& g, const float* dy, float* dx) override {
    launch(avgPoolBackwardKernel, int64_t{g.batch} * g.channels * g.height * g.width, g, dy, dx);
  }
  void meanSquaredError(const float* pred, const float* target, int rows, int cols, float scale, float* rowLoss,
                        float* dpred) override {
    launch(meanSquaredErrorKernel, rows, pred, target, rows, cols, scale, rowLoss, dpred);
  }
  void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows, int classes,
                                  float* probs, float* rowLoss, int32_t* rowCorrect) override {
    launch(softmaxCrossEntropyForwardKernel, rows, logits, labels, rows, classes, probs, rowLoss, rowCorrect);
  }
  void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows, int classes,
                                   float scale, float* dlogits) override {
    launch(softmaxCrossEntropyBackwardKernel, int64_t{rows} * classes, probs, labels, rows, classes,
           scale, dlogits);
  }

  // Transformer ops: kernels/transformer_ops.cu through the launchers of transformer_ops_cuda.h.
  void embeddingForward(const int32_t* ids, int n, const float* table, int dim, float* out,
                        bool acc) override {
    if (ok()) record(tcuda::embeddingForward(stream_, ids, n, table, dim, out, acc));
  }
  void embeddingBackward(const int32_t* ids, int n, const float* dout, int dim, int vocab,
                         float* dtable, bool acc) override {
    void* ws = workspace(tcuda::embeddingBackwardWorkspaceBytes(n, vocab));
    if (ok()) record(tcuda::embeddingBackward(stream_, ids, n, dout, dim, vocab, dtable, acc, ws));
  }
  void layerNormForward(const float* x, const float* gamma, const float* beta, int rows, int dim,
                        float eps, float* y, float* mean, float* rstd) override {
    if (ok()) record(tcuda::layerNormForward(stream_, x, gamma, beta, rows, dim, eps, y, mean, rstd));
  }
  void layerNormBackward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, int rows, int dim, float* dx, float* dgamma, float* dbeta,
                         bool acc) override {
    void* ws = workspace(tcuda::normBackwardWorkspaceBytes(rows, dim));
    if (ok()) {
      record(tcuda::layerNormBackward(stream_, x, gamma, mean, rstd, dy, rows, dim, dx, dgamma, dbeta,
                                      acc, ws));
    }
  }
  void rmsNormForward(const float* x, const float* gamma, int rows, int dim, float eps, float* y,
                      float* rstd) override {
    if (ok()) record(tcuda::rmsNormForward(stream_, x, gamma, rows, dim, eps, y, rstd));
  }
  void rmsNormBackward(const float* x, const float* gamma, const float* rstd, const float* dy,
                       int rows, int dim, float* dx, float* dgamma, bool acc) override {
    void* ws = workspace(tcuda::normBackwardWorkspaceBytes(rows, dim));
    if (ok()) record(tcuda::rmsNormBackward(stream_, x, gamma, rstd, dy, rows, dim, dx, dgamma, acc, ws));
  }
  void causalAttentionForward(const float* qkv, int batch, int seq, int heads, int headDim,
                              float* out, float* probs) override {
    if (ok()) record(tcuda::causalAttentionForward(stream_, blas_, qkv, batch, seq, heads, headDim, out, probs));
  }
  void causalAttentionBackward(const float* qkv, const float* probs, const float* dout, int batch,
                               int seq, int heads, int headDim, float* dqkv) override {
    void* ws = workspace(tcuda::causalAttentionBackwardWorkspaceBytes(batch, seq, heads));
    if (ok()) {
      record(tcuda::causalAttentionBackward(stream_, blas_, qkv, probs, dout, batch, seq, heads, headDim,
                                            dqkv, ws));
    }
  }
  void ropeForward(float* qkv, int batch, int seq, int heads, int headDim, float base) override {
    void* ws = workspace(tcuda::ropeWorkspaceBytes(seq, headDim));
    if (ok()) record(tcuda::rope(stream_, qkv, batch, seq, heads, headDim, base, 1.f, ws));
  }
  void ropeBackward(float* dqkv, int batch, int seq, int heads, int headDim, float base) override {
    void* ws = workspace(tcuda::ropeWorkspaceBytes(seq, headDim));
    if (ok()) record(tcuda::rope(stream_, dqkv, batch, seq, heads, headDim, base, -1.f, ws));
  }
  void addInPlace(float* y, const float* x, size_t n) override {
    if (ok()) record(tcuda::addInPlace(stream_, y, x, n));
  }
  void crossEntropyInPlace(float* logits, const int32_t* labels, int rows, int classes,
                           float scale, float* rowLoss, int32_t* rowCorrect) override {
    if (ok()) record(tcuda::crossEntropyInPlace(stream_, logits, labels, rows, classes, scale, rowLoss, rowCorrect));
  }
  void dropoutForward(const float* x, float* y, size_t n, float p, uint64_t seed) override {
    if (ok()) record(tcuda::dropout(stream_, x, y, n, p, seed));
  }
  void dropoutBackward(const float* dy, float* dx, size_t n, float p, uint64_t seed) override {
    if (ok()) record(tcuda::dropout(stream_, dy, dx, n, p, seed));
  }

  // The bf16 matmuls (Note [bf16 matmuls] in kernels/bf16_ops.h): bf16 copies of the operands in
  // the workspace, cuBLAS multiplies them with fp32 accumulation into the fp32 C.
  void gemmBf16(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, const float* b,
                float beta, float* c) override {
    if (!ok() || m == 0 || n == 0) return;
    const size_t na = static_cast<size_t>(m) * k, nb = static_cast<size_t>(k) * n;
    const size_t offsetB = (na * 2 + 255) / 256 * 256;
    char* ws = static_cast<char*>(workspace(offsetB + nb * 2 + 2));
    if (!ok()) return;
    record(cuda::castToBf16Async(stream_, a, ws, na));
    record(cuda::castToBf16Async(stream_, b, ws + offsetB, nb));
    if (!ok()) return;
    checkBlas(cublasGemmEx(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                           ws + offsetB, CUDA_R_16BF, tb ? k : n, ws, CUDA_R_16BF, ta ? m : k, &beta, c, CUDA_R_32F,
                           n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx (bf16 operands)");
  }
  void causalAttentionForwardBf16(const float* qkv, int batch, int seq, int heads, int headDim,
                                  float* out, float* probs) override {
    void* ws = workspace(tcuda::causalAttentionForwardBf16WorkspaceBytes(batch, seq, heads, headDim));
    if (ok()) {
      record(tcuda::causalAttentionForwardBf16(stream_, blas_, qkv, batch, seq, heads, headDim, out, probs, ws));
    }
  }
  void causalAttentionBackwardBf16(const float* qkv, const float* probs, const float* dout, int batch,
                                   int seq, int heads, int headDim, float* dqkv) override {
    void* ws = workspace(tcuda::causalAttentionBackwardBf16WorkspaceBytes(batch, seq, heads, headDim));
    if (ok()) {
      record(tcuda::causalAttentionBackwardBf16(stream_, blas_, qkv, probs, dout, batch, seq, heads, headDim,
                                                dqkv, ws));
    }
  }

 private:
  bool ok() const { return status_.isOk(); }
  void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess && ok()) {
      (void)(status_ = internalError(std::string("cuda:") + std::to_string(index_) + ": " + what +
                                    ": " + cudaGetErrorString(e)));
    }
  }
  void checkBlas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS && ok()) {
      (void)(status_ = internalError(std::string("cuda:") + std::to_string(index_) + ": " + what +
                                    " failed with cuBLAS status " +
                                    std::to_string(static_cast<int>(s))));
    }
  }
  // A launcher's error, named after this device (Note [Sticky device errors]).
  void record(const Status& s) {
    if (!s.isOk() && ok()) (void)(status_ = internalError("cuda:" + std::to_string(index_) + ": " + s.message()));
  }
  // Scratch memory for the transformer launchers: grows (never shrinks) and lives as long as this
  // object; nullptr with the error recorded when it cannot grow. Every op runs on stream_, so a
  // later op reusing it is ordered after the earlier one's kernels.
  void* workspace(size_t bytes) {
    if (!ok() || bytes <= workspaceBytes_) return workspace_;
    if (workspace_ != nullptr) {
      cudaStreamSynchronize(stream_);  // queued work may still read the old one
      cudaFree(workspace_);
      workspace_ = nullptr;
      workspaceBytes_ = 0;
    }
    check(cudaMalloc(&workspace_, bytes), ("cudaMalloc " + std::to_string(bytes) + " bytes for the op workspace").c_str());
    if (!ok()) {
      workspace_ = nullptr;
      return nullptr;
    }
    workspaceBytes_ = bytes;
    return workspace_;
  }
  template <typename Kernel, typename... Args>
  void launch(Kernel kernel, int64_t n, Args... args) {
    if (!ok() || n <= 0) return;
    kernel<<<blocksFor(n), kThreads, 0, stream_>>>(args...);
    check(cudaGetLastError(), "kernel launch");
  }

  int index_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;  // workspace(): scratch of the transformer ops
  size_t workspaceBytes_ = 0;
  Status status_;
};

}  // namespace

int cudaDeviceCount() {
  int n = 0;  // stays 0 when the call fails (no driver / no GPU: error 35 or 100)
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return n;
}

Result<std::unique_ptr<LayerOps>> makeCudaLayerOps(int index) {
  const int count = cudaDeviceCount();
  if (count == 0) return unavailable("CUDA layer ops: no CUDA device is visible");
  if (index < 0 || index >= count) {
    return invalidArgument("CUDA layer ops: device cuda:" + std::to_string(index) + " does not exist (" +
                           std::to_string(count) + " visible)");
  }
  auto ops = std::make_unique<CudaLayerOps>(index);
  DDP_RETURN_IF_ERROR(ops->init());
  return std::unique_ptr<LayerOps>(std::move(ops));
}

}  // namespace ddp::kernels
