// CUDA implementations of kernels/optim_ops.h (compiled only with DDP_WITH_CUDA).
//
// Note [Multi-tensor apply]
// Like apex's multi_tensor_apply, one launch covers a whole list of tensors: the host cuts every
// tensor into chunks of kChunk elements and uploads a table (tensor metadata + one entry per
// chunk); block b processes chunk b with a grid-stride loop. Small tensors (biases) thus share
// a launch with large ones instead of costing a launch each.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/optim_ops.h"

namespace ddp::kernels {
namespace {

constexpr size_t kChunk = 65536;
constexpr int kThreads = 256;

Status cudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internalError(std::string(what) + ": " + cudaGetErrorString(err));
}

struct AdamMeta {
  float* p;
  const float* g;
  float* m;
  float* v;
  size_t n;
  float stepSize;
  float bc2Sqrt;
};

struct SgdMeta {
  float* p;
  const float* g;
  float* buf;
  size_t n;
  int firstStep;
};

struct ChunkRef {
  int tensor;
  size_t begin;
};

__global__ void adamKernel(const AdamMeta* metas, const ChunkRef* chunks, float b1, float b2,
                           float eps, float l2, float decay, float gradScale) {
  const ChunkRef c = chunks[blockIdx.x];
  const AdamMeta t = metas[c.tensor];
  const size_t end = c.begin + kChunk < t.n ? c.begin + kChunk : t.n;
  const float omb1 = 1.f - b1, omb2 = 1.f - b2;
  for (size_t i = c.begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = t.p[i] * decay;
    const float gi = t.g[i] * gradScale + l2 * pi;
    const float mi = b1 * t.m[i] + omb1 * gi;
    const float vi = b2 * t.v[i] + omb2 * gi * gi;
    t.m[i] = mi;
    t.v[i] = vi;
    const float denom = sqrtf(vi) / t.bc2Sqrt + eps;
    t.p[i] = pi - t.stepSize * (mi / denom);
  }
}

__global__ void sgdKernel(const SgdMeta* metas, const ChunkRef* chunks, float lr, float mom,
                          float omd, float wd, int nesterov, float gradScale) {
  const ChunkRef c = chunks[blockIdx.x];
  const SgdMeta t = metas[c.tensor];
  const size_t end = c.begin + kChunk < t.n ? c.begin + kChunk : t.n;
  for (size_t i = c.begin + threadIdx.x; i < end; i += blockDim.x) {
    const float d = t.g[i] * gradScale + wd * t.p[i];
    if (mom == 0.f) {
      t.p[i] -= lr * d;
      continue;
    }
    const float b = t.firstStep ? d : mom * t.buf[i] + omd * d;
    t.buf[i] = b;
    const float upd = nesterov ? d + mom * b : b;
    t.p[i] -= lr * upd;
  }
}

__global__ void sumSquaresKernel(const float* x, size_t n, double* out) {
  __shared__ double partial[kThreads];
  double s = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    s += static_cast<double>(x[i]) * x[i];
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

__global__ void scaleKernel(float* x, size_t n, float alpha) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] *= alpha;
  }
}

// Device memory freed on scope exit.
struct DeviceScratch {
  void* ptr = nullptr;
  ~DeviceScratch() {
    if (ptr) (void)cudaFree(ptr);
  }
};

// Uploads `metas` and the chunk table, runs `launch(dMetas, dChunks, numChunks)`, syncs.
template <typename Meta, typename Launch>
Status runMultiTensor(const std::vector<Meta>& metas, Launch launch, const char* what) {
  std::vector<ChunkRef> chunks;
  for (size_t t = 0; t < metas.size(); ++t) {
    for (size_t b = 0; b < metas[t].n; b += kChunk) chunks.push_back({static_cast<int>(t), b});
  }
  if (chunks.empty()) return Status::ok();
  DeviceScratch dMetas, dChunks;
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&dMetas.ptr, metas.size() * sizeof(Meta)), what));
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&dChunks.ptr, chunks.size() * sizeof(ChunkRef)), what));
  DDP_RETURN_IF_ERROR(cudaStatus(
      cudaMemcpy(dMetas.ptr, metas.data(), metas.size() * sizeof(Meta), cudaMemcpyHostToDevice), what));
  DDP_RETURN_IF_ERROR(cudaStatus(
      cudaMemcpy(dChunks.ptr, chunks.data(), chunks.size() * sizeof(ChunkRef), cudaMemcpyHostToDevice), what));
  launch(static_cast<const Meta*>(dMetas.ptr), static_cast<const ChunkRef*>(dChunks.ptr),
         static_cast<unsigned>(chunks.size()));
  DDP_RETURN_IF_ERROR(cudaStatus(cudaGetLastError(), what));
  return cudaStatus(cudaDeviceSynchronize(), what);
}

}  // namespace

Status adamStepCuda(const std::vector<AdamTensor>& tensors, const AdamHyper& h, float gradScale) {
  std::vector<AdamMeta> metas;
  metas.reserve(tensors.size());
  for (const AdamTensor& t : tensors) {
    const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(t.step));
    const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(t.step));
    metas.push_back({t.param, t.grad, t.expAvg, t.expAvgSq, t.n, static_cast<float>(h.lr / bc1),
                     static_cast<float>(std::sqrt(bc2))});
  }
  const float l2 = h.decoupled ? 0.f : h.weightDecay;
  const float decay = h.decoupled ? 1.f - h.lr * h.weightDecay : 1.f;
  return runMultiTensor(
      metas,
      [&](const AdamMeta* m, const ChunkRef* c, unsigned blocks) {
        adamKernel<<<blocks, kThreads>>>(m, c, h.beta1, h.beta2, h.eps, l2, decay, gradScale);
      },
      "adamStepCuda");
}

Status sgdStepCuda(const std::vector<SgdTensor>& tensors, const SgdHyper& h, float gradScale) {
  std::vector<SgdMeta> metas;
  metas.reserve(tensors.size());
  for (const SgdTensor& t : tensors) {
    metas.push_back({t.param, t.grad, t.momentumBuf, t.n, t.firstStep ? 1 : 0});
  }
  return runMultiTensor(
      metas,
      [&](const SgdMeta* m, const ChunkRef* c, unsigned blocks) {
        sgdKernel<<<blocks, kThreads>>>(m, c, h.lr, h.momentum, 1.f - h.dampening, h.weightDecay,
                                        h.nesterov ? 1 : 0, gradScale);
      },
      "sgdStepCuda");
}

Result<double> sumSquaresCuda(const float* x, size_t n) {
  DeviceScratch dOut;
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&dOut.ptr, sizeof(double)), "sumSquaresCuda"));
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMemset(dOut.ptr, 0, sizeof(double)), "sumSquaresCuda"));
  if (n > 0) {
    const size_t blocks = std::min<size_t>((n + kThreads - 1) / kThreads, 1024);
    sumSquaresKernel<<<static_cast<unsigned>(blocks), kThreads>>>(x, n, static_cast<double*>(dOut.ptr));
    DDP_RETURN_IF_ERROR(cudaStatus(cudaGetLastError(), "sumSquaresCuda"));
  }
  double out = 0;
  DDP_RETURN_IF_ERROR(cudaStatus(cudaMemcpy(&out, dOut.ptr, sizeof(double), cudaMemcpyDeviceToHost), "sumSquaresCuda"));
  return out;
}

Status scaleCuda(float* x, size_t n, float alpha) {
  if (n == 0) return Status::ok();
  const size_t blocks = std::min<size_t>((n + kThreads - 1) / kThreads, 4096);
  scaleKernel<<<static_cast<unsigned>(blocks), kThreads>>>(x, n, alpha);
  DDP_RETURN_IF_ERROR(cudaStatus(cudaGetLastError(), "scaleCuda"));
  return cudaStatus(cudaDeviceSynchronize(), "scaleCuda");
}

}  // namespace ddp::kernels
