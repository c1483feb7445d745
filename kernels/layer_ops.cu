// CUDA implementation of kernels/layer_ops.h: cuBLAS for GEMM, one small kernel per op.
// Every kernel is deterministic (gathers instead of atomics), so results do not depend on
// scheduling; they match the CPU twins up to float rounding (tests/kernels/layer_ops_cuda_test.cc).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <string>

#include "kernels/layer_ops.h"

namespace ddp::kernels {
namespace {

constexpr int kThreads = 256;

inline int blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

#define DDP_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

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

__device__ inline float actForward(Activation a, float x) {
  switch (a) {
    case Activation::kRelu: return x > 0.f ? x : 0.f;
    case Activation::kTanh: return tanhf(x);
    case Activation::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
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

// Gather: each input element sums dy of the windows whose argmax it is.
__global__ void maxPoolBackwardKernel(ConvGeometry g, const float* dy, const int32_t* argmax, float* dx) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t hw = int64_t{g.height} * g.width;
  DDP_GRID_STRIDE(i, int64_t{g.batch} * g.channels * hw) {
    const int64_t pl = i / hw;
    const int idx = static_cast<int>(i % hw);
    const int y = idx / g.width, x = idx % g.width;
    const int oyLo = y - g.kernelH + 1 > 0 ? (y - g.kernelH + 1 + g.stride - 1) / g.stride : 0;
    const int oyHi = min(y / g.stride, oh - 1);
    const int oxLo = x - g.kernelW + 1 > 0 ? (x - g.kernelW + 1 + g.stride - 1) / g.stride : 0;
    const int oxHi = min(x / g.stride, ow - 1);
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
  void softmaxCrossEntropyForward(const float* logits, const int32_t* labels, int rows, int classes,
                                  float* probs, float* rowLoss, int32_t* rowCorrect) override {
    launch(softmaxCrossEntropyForwardKernel, rows, logits, labels, rows, classes, probs, rowLoss, rowCorrect);
  }
  void softmaxCrossEntropyBackward(const float* probs, const int32_t* labels, int rows, int classes,
                                   float scale, float* dlogits) override {
    launch(softmaxCrossEntropyBackwardKernel, int64_t{rows} * classes, probs, labels, rows, classes,
           scale, dlogits);
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
  template <typename Kernel, typename... Args>
  void launch(Kernel kernel, int64_t n, Args... args) {
    if (!ok() || n <= 0) return;
    kernel<<<blocksFor(n), kThreads, 0, stream_>>>(args...);
    check(cudaGetLastError(), "kernel launch");
  }

  int index_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
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
