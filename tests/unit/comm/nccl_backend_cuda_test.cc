// NcclBackend on one GPU (world size 1: one GPU cannot host two NCCL ranks). Each op is checked
// against its closed form for one rank on device buffers, including the f16/bf16 f32-accumulate
// path, coalescing, abort (also while a kernel holds the stream), and a ProcessGroup mixing an
// in-process CPU member with NCCL.
// Skips when no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/cuda/spin_kernel.h"
#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"
#include "common/store/in_memory_store.h"
#include "worker/comm/nccl_backend.h"
#include "worker/comm/process_group.h"

namespace ddp::comm {
namespace {

// Device memory holding `n` elements of `dtype`.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t n, DType dtype) : n_(n), dtype_(dtype) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(1, n * dtypeSize(dtype))), cudaSuccess);
  }
  ~DeviceBuffer() { (void)cudaFree(p_); }
  BufferView view() const { return {p_, n_, dtype_, Device::cuda(0)}; }
  void upload(const std::string& bytes) {
    ASSERT_EQ(cudaMemcpy(p_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::string download() const {
    std::string out(n_ * dtypeSize(dtype_), '\0');
    EXPECT_EQ(cudaMemcpy(out.data(), p_, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* p_ = nullptr;
  size_t n_;
  DType dtype_;
};

// Host bytes of `n` values (i % 7) - 3 in `dtype` (exact in every dtype).
std::string pattern(size_t n, DType dtype, int shift = 0) {
  std::string out(n * dtypeSize(dtype), '\0');
  for (size_t i = 0; i < n; ++i) {
    const double v = double(int((i + shift) % 7) - 3);
    char* p = out.data() + i * dtypeSize(dtype);
    switch (dtype) {
      case DType::kF32: { float f = float(v); std::memcpy(p, &f, 4); break; }
      case DType::kF64: std::memcpy(p, &v, 8); break;
      case DType::kF16: { uint16_t h = floatToHalf(float(v)); std::memcpy(p, &h, 2); break; }
      case DType::kBF16: { uint16_t h = floatToBf16(float(v)); std::memcpy(p, &h, 2); break; }
      case DType::kI32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
      case DType::kI64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
    }
  }
  return out;
}

class NcclBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;  // stays 0 when cudaGetDeviceCount fails (no GPU: error 35)
    (void)cudaGetDeviceCount(&n);
    if (n == 0) GTEST_SKIP() << "no GPU present";
    NcclOptions o;
    o.prefix = "test/gen0";
    o.timeout = std::chrono::seconds(60);
    o.connectTimeout = std::chrono::seconds(60);
    auto b = NcclBackend::create(o, store_);
    ASSERT_TRUE(b.isOk()) << b.status();
    backend_ = std::move(*b);
  }

  InMemoryStore store_;
  std::unique_ptr<NcclBackend> backend_;
};

const DType kDtypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

TEST_F(NcclBackendTest, RendezvousPublishesTheUniqueId) {
  auto id = store_.get("test/gen0/nccl_unique_id", Deadline::after(1s));
  ASSERT_TRUE(id.isOk());
  EXPECT_EQ(id->size(), 128u);
  EXPECT_EQ(backend_->groupName(), "nccl:test/gen0 rank 0/1");
  EXPECT_TRUE(backend_->supportsDevice(DeviceType::kCuda));
  EXPECT_FALSE(backend_->supportsDevice(DeviceType::kCpu));
}

TEST_F(NcclBackendTest, AllreduceEveryDtypeAndOpIsTheIdentityForOneRank) {
  for (DType dt : kDtypes) {
    for (ReduceOp op : kOps) {
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000)}) {
        DeviceBuffer buf(n, dt);
        const std::string in = pattern(n, dt);
        buf.upload(in);
        Status st = backend_->allreduce(buf.view(), op)->wait();
        ASSERT_TRUE(st.isOk()) << dtypeName(dt) << " " << reduceOpName(op) << ": " << st;
        EXPECT_EQ(buf.download(), in) << dtypeName(dt) << " " << reduceOpName(op) << " n=" << n;
      }
    }
  }
}

TEST_F(NcclBackendTest, OtherCollectivesMatchTheirClosedForms) {
  for (DType dt : kDtypes) {
    const size_t n = 33;
    const std::string in = pattern(n, dt);
    DeviceBuffer a(n, dt), out(n, dt), rs(n, dt);
    a.upload(in);
    ASSERT_TRUE(backend_->broadcast(a.view(), 0)->wait().isOk());
    EXPECT_EQ(a.download(), in);
    ASSERT_TRUE(backend_->allgather(a.view(), out.view())->wait().isOk());
    EXPECT_EQ(out.download(), in);
    ASSERT_TRUE(backend_->reduceScatter(a.view(), rs.view(), ReduceOp::kSum)->wait().isOk());
    EXPECT_EQ(rs.download(), in);
    DeviceBuffer g(n, dt);
    ASSERT_TRUE(backend_->gather(a.view(), g.view(), 0)->wait().isOk());
    EXPECT_EQ(g.download(), in);
  }
  ASSERT_TRUE(backend_->barrier()->wait().isOk());
}

TEST_F(NcclBackendTest, OpsCompleteInIssueOrderWithIncreasingSeq) {
  DeviceBuffer a(4096, DType::kF32);
  a.upload(pattern(4096, DType::kF32));
  std::vector<WorkPtr> works;
  for (int i = 0; i < 20; ++i) works.push_back(backend_->allreduce(a.view(), ReduceOp::kSum));
  ASSERT_TRUE(works.back()->wait().isOk());
  for (size_t i = 0; i < works.size(); ++i) {
    EXPECT_TRUE(works[i]->isCompleted());
    EXPECT_EQ(works[i]->seq(), i + 1);
  }
}

TEST_F(NcclBackendTest, CoalescedBatchCompletesEveryMember) {
  DeviceBuffer a(10, DType::kF32), b(10, DType::kBF16), g(10, DType::kF32);
  a.upload(pattern(10, DType::kF32));
  b.upload(pattern(10, DType::kBF16, 2));
  ASSERT_TRUE(backend_->startCoalescing().isOk());
  auto w1 = backend_->allreduce(a.view(), ReduceOp::kSum);
  auto w2 = backend_->allreduce(b.view(), ReduceOp::kAvg);  // f32-accumulate path inside a group
  auto w3 = backend_->gather(a.view(), g.view(), 0);
  auto batch = backend_->endCoalescing();
  ASSERT_TRUE(batch->wait().isOk());
  EXPECT_EQ(batch->opType(), OpType::kCoalesced);
  EXPECT_TRUE(w1->isCompleted() && w2->isCompleted() && w3->isCompleted());
  EXPECT_EQ(a.download(), pattern(10, DType::kF32));
  EXPECT_EQ(b.download(), pattern(10, DType::kBF16, 2));
  EXPECT_EQ(g.download(), pattern(10, DType::kF32));
}

TEST_F(NcclBackendTest, BadArgumentsFailWithoutTouchingTheCommunicator) {
  float host = 1.f;
  EXPECT_EQ(backend_->allreduce(viewOf(&host, 1), ReduceOp::kSum)->wait().code(), StatusCode::kInvalidArgument);
  DeviceBuffer a(4, DType::kF32), small(3, DType::kF32);
  BufferView other = a.view();
  other.device = Device::cuda(1);
  EXPECT_EQ(backend_->allreduce(other, ReduceOp::kSum)->wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->allgather(a.view(), small.view())->wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->broadcast(a.view(), 3)->wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->send(a.view(), 0, 0)->wait().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(backend_->isAborted());
  ASSERT_TRUE(backend_->allreduce(a.view(), ReduceOp::kSum)->wait().isOk());
}

TEST_F(NcclBackendTest, AbortFailsPendingAndFutureOps) {
  DeviceBuffer a(1 << 16, DType::kF32);
  auto w = backend_->allreduce(a.view(), ReduceOp::kSum);
  backend_->abort(abortedError("test abort"));
  EXPECT_TRUE(backend_->isAborted());
  Status st = w->wait(Deadline::after(10s));
  EXPECT_TRUE(st.isOk() || st.code() == StatusCode::kAborted) << st;  // it may have finished first
  EXPECT_EQ(backend_->allreduce(a.view(), ReduceOp::kSum)->wait(Deadline::after(10s)).code(), StatusCode::kAborted);
  EXPECT_EQ(backend_->startCoalescing().code(), StatusCode::kAborted);
  backend_->abort(abortedError("again"));  // idempotent
}

// The nonblocking communicator aborted while its stream waits behind a kernel that spins on a
// host flag (the device busy, as in a hung peer's collective): abort() returns within
// abortTimeout without the hung-abort handler, the queued op fails Aborted within its deadline,
// and the device is released afterwards.
TEST(NcclBackendAbortTest, AbortWhileAKernelHoldsTheStreamReturnsWithinItsDeadline) {
  int n = 0;
  (void)cudaGetDeviceCount(&n);
  if (n == 0) GTEST_SKIP() << "no GPU present";
  InMemoryStore store;
  std::atomic<int> hung{0};
  NcclOptions o;
  o.prefix = "test/abort";
  o.timeout = std::chrono::seconds(60);
  o.connectTimeout = std::chrono::seconds(60);
  o.abortTimeout = std::chrono::seconds(10);
  o.onAbortHung = [&](const std::string&) { hung.fetch_add(1); };
  auto created = NcclBackend::create(o, store);
  ASSERT_TRUE(created.isOk()) << created.status();
  std::unique_ptr<NcclBackend> backend = std::move(*created);
  DeviceBuffer a(1 << 20, DType::kF32);
  ddp::testing::HostFlagSpin spin;
  ASSERT_TRUE(spin.ok());
  ASSERT_EQ(spin.launch(cudaStreamLegacy), "");  // stream 0: the backend's ops wait for it
  const auto started = std::chrono::steady_clock::now();
  while (!spin.started() && std::chrono::steady_clock::now() - started < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(spin.started()) << "the spinning kernel never started";
  auto w = backend->allreduce(a.view(), ReduceOp::kSum);
  const auto t0 = std::chrono::steady_clock::now();
  backend->abort(abortedError("test abort while the stream is held"));
  const double abortSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(abortSeconds, 10.0);
  EXPECT_EQ(hung.load(), 0) << "ncclCommAbort did not return within abortTimeout";
  EXPECT_TRUE(backend->isAborted());
  EXPECT_EQ(w->wait(Deadline::after(std::chrono::seconds(10))).code(), StatusCode::kAborted);
  spin.release();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  backend.reset();
  RecordProperty("abort_seconds", std::to_string(abortSeconds));
}

TEST_F(NcclBackendTest, ProcessGroupRoutesCpuToTheCpuMemberAndCudaToNccl) {
  auto group = makeLocalGroup(1);
  LocalBackend cpu(group, 0);
  RecordingBackend recCpu(cpu), recNccl(*backend_);
  auto pg = ProcessGroup::createUnowned({&recCpu, &recNccl});
  ASSERT_TRUE(pg.isOk()) << pg.status();
  float host = 3.f;
  DeviceBuffer dev(8, DType::kF32);
  dev.upload(pattern(8, DType::kF32));
  ASSERT_TRUE((*pg)->allreduce(viewOf(&host, 1), ReduceOp::kSum)->wait().isOk());
  ASSERT_TRUE((*pg)->allreduce(dev.view(), ReduceOp::kSum)->wait().isOk());
  ASSERT_TRUE((*pg)->barrier()->wait().isOk());
  EXPECT_EQ(host, 3.f);
  EXPECT_EQ(dev.download(), pattern(8, DType::kF32));
  EXPECT_EQ(recCpu.ops().size(), 2u);   // allreduce + barrier
  EXPECT_EQ(recNccl.ops().size(), 1u);  // the device allreduce
  EXPECT_EQ((*pg)->allgather(viewOf(&host, 1), dev.view().slice(0, 1))->wait().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::comm
