// The Reducer on CUDA parameters over NcclBackend (one GPU: a world of 1, so the average is
// the gradient itself): device buckets, the CUDA bucket kernels, the control collectives staged
// through device memory (NCCL takes no host buffers), bucket views, fp16 hook and bf16
// mixed-precision buckets. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/flat_buffer.h"
#include "common/store/in_memory_store.h"
#include "worker/comm/nccl_backend.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/reducer.h"

namespace ddp {
namespace {

bool haveGpu() {
  int count = 0;  // stays 0 when cudaGetDeviceCount fails (no driver / no device)
  if (cudaGetDeviceCount(&count) != cudaSuccess) return false;
  return count > 0;
}

struct DeviceParam {
  kernels::FlatBuffer data, grad;
  Parameter param;
};

struct Case {
  std::string hook;
  std::optional<DType> reduceDtype;
  bool view;
  double tol;
};

class ReducerCuda : public ::testing::TestWithParam<Case> {};

TEST_P(ReducerCuda, WorldOfOneKeepsGradientsThroughDeviceBuckets) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  const Case c = GetParam();
  comm::InMemoryStore store;
  comm::NcclOptions no;
  no.prefix = "reducer_cuda_" + c.hook;
  auto backend = comm::createNcclBackend(no, store);
  ASSERT_TRUE(backend.isOk()) << backend.status();
  const std::vector<std::vector<int64_t>> shapes = {{64, 33}, {33}, {7, 5}, {5}};
  std::vector<DeviceParam> params(shapes.size());
  std::vector<std::vector<float>> want;
  std::vector<Parameter*> ptrs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    DeviceParam& p = params[i];
    p.param.name = "p" + std::to_string(i);
    p.param.shape = shapes[i];
    p.param.device = Device::cuda(0);
    const size_t n = p.param.numel();
    auto d = kernels::FlatBuffer::allocate(n, DType::kF32, Device::cuda(0));
    auto g = kernels::FlatBuffer::allocate(n, DType::kF32, Device::cuda(0));
    ASSERT_TRUE(d.isOk() && g.isOk());
    p.data = std::move(d).value();
    p.grad = std::move(g).value();
    p.param.data = p.data.data();
    p.param.grad = p.grad.data();
    ptrs.push_back(&p.param);
  }
  ReducerOptions opts;
  opts.firstBucketCapBytes = 64;
  opts.bucketCapBytes = 4096;
  opts.reduceDtype = c.reduceDtype;
  opts.gradientAsBucketView = c.view;
  auto r = Reducer::create(**backend, ptrs, opts);
  ASSERT_TRUE(r.isOk()) << r.status();
  if (auto h = c.hook == "fp16" ? makeFp16CompressHook(**backend) : nullptr) {
    ASSERT_TRUE((*r)->registerCommHook(std::move(h)).isOk());
  }
  for (int step = 0; step < 2; ++step) {  // the second step runs on the rebuilt buckets
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<float> host(params[i].param.numel());
      for (size_t j = 0; j < host.size(); ++j) host[j] = std::sin(0.1f * (j + 1) * (i + 1) + step);
      ASSERT_TRUE(kernels::copyFlat({ptrs[i]->grad, host.size(), DType::kF32, Device::cuda(0)},
                                    {host.data(), host.size()})
                      .isOk());
      if (want.size() <= i) want.emplace_back();
      want[i] = host;
    }
    for (size_t i = params.size(); i-- > 0;) ASSERT_TRUE((*r)->markGradReady(i).isOk());
    Status st = (*r)->finalize(Deadline::after(std::chrono::seconds(30)));
    ASSERT_TRUE(st.isOk()) << st;
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<float> got(want[i].size());
      ASSERT_TRUE(kernels::copyFlat({got.data(), got.size()}, {ptrs[i]->grad, got.size(), DType::kF32, Device::cuda(0)})
                      .isOk());
      for (size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], want[i][j], c.tol) << "param " << i << " elem " << j;
    }
  }
  EXPECT_TRUE((*r)->bucketsRebuilt());
}

INSTANTIATE_TEST_SUITE_P(Cases, ReducerCuda,
                         ::testing::Values(Case{"none", std::nullopt, false, 1e-6}, Case{"none", std::nullopt, true, 1e-6},
                                           Case{"fp16", std::nullopt, false, 1e-3},
                                           Case{"none", DType::kBF16, false, 1e-2}));

}  // namespace
}  // namespace ddp
