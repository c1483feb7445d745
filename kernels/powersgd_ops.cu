// CUDA twins of the PowerSGD element-wise kernels and Gram-Schmidt (kernels/powersgd_ops.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/powersgd_ops.h"
#include "kernels/powersgd_ops_cuda.h"

namespace ddp::kernels::powersgd::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

int blocksFor(size_t n) {
  return static_cast<int>(std::min(kMaxBlocks, (n + kThreads - 1) / kThreads));
}

// Switches to `device` for the scope of one call and restores the previous device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : target_(device) {
    status_ = cudaGetDevice(&previous_);
    if (status_ == cudaSuccess && previous_ != target_) status_ = cudaSetDevice(target_);
  }
  ~DeviceGuard() {
    if (status_ == cudaSuccess && previous_ != target_) cudaSetDevice(previous_);
  }
  cudaError_t status() const { return status_; }

 private:
  int target_;
  int previous_ = 0;
  cudaError_t status_;
};

// Launch errors; with no stream given, also waits for the kernel (the synchronous contract).
Status launchStatus(const char* what, void* stream) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return internalError(std::string(what) + ": kernel launch failed: " + cudaGetErrorString(e));
  if (stream == nullptr) {
    e = cudaStreamSynchronize(nullptr);
    if (e != cudaSuccess) return internalError(std::string(what) + ": kernel failed: " + cudaGetErrorString(e));
  }
  return Status::ok();
}

__global__ void addKernel(float* __restrict__ grad, const float* __restrict__ error, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    grad[i] += error[i];
  }
}

__global__ void updateKernel(float* __restrict__ buffer, float* __restrict__ approx, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float input = buffer[i];
    const float a = approx[i];
    buffer[i] = a;
    approx[i] = input - a;
  }
}

// Note [Deferred error feedback]: e = sum - prevP prevQ^T, sum = grad + e (prevP may be null).
__global__ void compensateKernel(const float* __restrict__ grad, float* __restrict__ sum,
                                 const float* __restrict__ prevP, const float* __restrict__ prevQ, size_t rows,
                                 size_t cols, size_t r) {
  const size_t n = rows * cols;
  for (size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float e = sum[idx];
    if (prevP != nullptr) {
      const size_t i = idx / cols, j = idx % cols;
      float a = 0.0f;
      for (size_t k = 0; k < r; ++k) a = fmaf(prevP[i * r + k], prevQ[j * r + k], a);
      e = e - a;
    }
    sum[idx] = grad[idx] + e;
  }
}

__global__ void scaleKernel(float* __restrict__ x, size_t n, float alpha) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] *= alpha;
  }
}

// Block-wide sum of `v` (every thread gets the result). `scratch` holds kThreads doubles.
__device__ double blockSum(double v, double* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  const double total = scratch[0];
  __syncthreads();
  return total;
}

// One block per matrix: Gram-Schmidt column by column, two passes (see the CPU twin).
__device__ double columnSquare(const float* a, size_t n, size_t r, size_t i, double* scratch) {
  double sq = 0;
  for (size_t k = threadIdx.x; k < n; k += kThreads) {
    const double v = a[k * r + i];
    sq += v * v;
  }
  return blockSum(sq, scratch);
}

__global__ void gramSchmidtKernel(float* matrices, size_t n, size_t r, float epsilon, double tolerance) {
  __shared__ double scratch[kThreads];
  float* a = matrices + blockIdx.x * n * r;
  for (size_t i = 0; i < r; ++i) {
    const double before = i > 0 ? sqrt(columnSquare(a, n, r, i, scratch)) : 0.0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t j = 0; j < i; ++j) {
        double dot = 0;
        for (size_t k = threadIdx.x; k < n; k += kThreads) dot += static_cast<double>(a[k * r + j]) * a[k * r + i];
        const float d = static_cast<float>(blockSum(dot, scratch));
        for (size_t k = threadIdx.x; k < n; k += kThreads) a[k * r + i] -= d * a[k * r + j];
        __syncthreads();
      }
    }
    const double norm = sqrt(columnSquare(a, n, r, i, scratch));
    if (i > 0 && norm <= tolerance * before) {  // Note [Zero columns in Gram-Schmidt]
      for (size_t k = threadIdx.x; k < n; k += kThreads) a[k * r + i] = 0.0f;
    } else {
      const float denom = static_cast<float>(norm) + epsilon;
      if (denom != 0.0f) {
        for (size_t k = threadIdx.x; k < n; k += kThreads) a[k * r + i] /= denom;
      }
    }
    __syncthreads();
  }
}

}  // namespace

#define DDP_GUARD_DEVICE(device, what)                                                            \
  DeviceGuard guard((device).index);                                                            \
  if (guard.status() != cudaSuccess)                                                            \
    return internalError(std::string(what) + ": cannot select " + (device).toString() + ": " + \
                         cudaGetErrorString(guard.status()))

Status errorFeedbackAdd(Device device, float* grad, const float* error, size_t n, void* stream) {
  if (n == 0) return Status::ok();
  DDP_GUARD_DEVICE(device, "errorFeedbackAdd");
  addKernel<<<blocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(grad, error, n);
  return launchStatus("errorFeedbackAdd", stream);
}

Status errorFeedbackUpdate(Device device, float* buffer, float* approx, size_t n, void* stream) {
  if (n == 0) return Status::ok();
  DDP_GUARD_DEVICE(device, "errorFeedbackUpdate");
  updateKernel<<<blocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(buffer, approx, n);
  return launchStatus("errorFeedbackUpdate", stream);
}

Status compensate(Device device, const float* grad, float* sum, const float* prevP, const float* prevQ, size_t rows,
                  size_t cols, size_t r, void* stream) {
  const size_t n = rows * cols;
  if (n == 0) return Status::ok();
  DDP_GUARD_DEVICE(device, "compensateAndComputeP");
  compensateKernel<<<blocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(grad, sum, prevP, prevQ, rows,
                                                                                    cols, r);
  return launchStatus("compensateAndComputeP", stream);
}

Status scale(Device device, float* x, size_t n, float alpha, void* stream) {
  if (n == 0) return Status::ok();
  DDP_GUARD_DEVICE(device, "scale");
  scaleKernel<<<blocksFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n, alpha);
  return launchStatus("scale", stream);
}

Status orthogonalize(Device device, float* matrices, size_t batch, size_t n, size_t r, float epsilon,
                     void* stream) {
  if (batch > 0x7fffffffu) return invalidArgument("orthogonalize: batch too large for one launch");
  DDP_GUARD_DEVICE(device, "orthogonalize");
  gramSchmidtKernel<<<static_cast<unsigned>(batch), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      matrices, n, r, epsilon, kDependentColumnTolerance);
  return launchStatus("orthogonalize", stream);
}

}  // namespace ddp::kernels::powersgd::cuda
