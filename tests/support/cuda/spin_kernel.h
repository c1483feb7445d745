#pragma once
// A CUDA kernel that holds a stream until the host says so, for tests of what happens while the
// device is busy (an NCCL abort while its stream waits behind a running kernel).
// Thread model: HostFlagSpin is used by one test thread; its destructor releases the kernel and
// waits for it, so a failed assertion never leaves the GPU spinning.

#include <cuda_runtime.h>

#include <string>

namespace ddp::testing {

class HostFlagSpin {
 public:
  // Allocates the flag (pinned, mapped host memory). ok() says whether that worked.
  HostFlagSpin();
  ~HostFlagSpin();
  HostFlagSpin(const HostFlagSpin&) = delete;
  HostFlagSpin& operator=(const HostFlagSpin&) = delete;

  bool ok() const { return flag_ != nullptr; }
  // Launches one thread that spins until release() (or `maxSeconds`, a bound so that a lost
  // release cannot wedge the device) on `stream`. Returns the launch's error string, "" if none.
  std::string launch(cudaStream_t stream, double maxSeconds = 30.0);
  // Lets the kernel end (does not wait for it).
  void release();
  // Whether the kernel has started spinning (it writes the flag's second word when it starts).
  bool started() const;

 private:
  volatile int* flag_ = nullptr;  // [0]: 1 = release; [1]: 1 = the kernel is spinning
  int* deviceFlag_ = nullptr;
};

}  // namespace ddp::testing
