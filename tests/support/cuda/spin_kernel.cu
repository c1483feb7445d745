#include "tests/support/cuda/spin_kernel.h"

namespace ddp::testing {
namespace {

__global__ void spinUntilReleased(volatile int* flag, unsigned long long maxNanos) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  flag[1] = 1;
  __threadfence_system();
  for (;;) {
    if (flag[0] != 0) return;
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > maxNanos) return;
    __nanosleep(1000);
  }
}

}  // namespace

HostFlagSpin::HostFlagSpin() {
  void* p = nullptr;
  if (cudaHostAlloc(&p, 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess) return;
  flag_ = static_cast<volatile int*>(p);
  flag_[0] = 0;
  flag_[1] = 0;
  if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceFlag_), p, 0) != cudaSuccess) {
    cudaFreeHost(p);
    flag_ = nullptr;
  }
}

HostFlagSpin::~HostFlagSpin() {
  if (flag_ == nullptr) return;
  release();
  (void)cudaDeviceSynchronize();
  (void)cudaFreeHost(const_cast<int*>(flag_));
}

std::string HostFlagSpin::launch(cudaStream_t stream, double maxSeconds) {
  spinUntilReleased<<<1, 1, 0, stream>>>(deviceFlag_, static_cast<unsigned long long>(maxSeconds * 1e9));
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : cudaGetErrorString(err);
}

void HostFlagSpin::release() {
  if (flag_ != nullptr) flag_[0] = 1;
}

bool HostFlagSpin::started() const { return flag_ != nullptr && flag_[1] != 0; }

}  // namespace ddp::testing
