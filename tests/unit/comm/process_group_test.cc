// ProcessGroup routing, proved with in-process members: a CPU LocalBackend group and a second
// LocalBackend group that claims CUDA. The "CUDA" member is a fake: its buffers are host memory
// labelled Device::cuda(0), which lets a CPU-only build show where each op goes. Both members are
// wrapped in RecordingBackend so the test sees which member ran what.
#include "worker/comm/process_group.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/gloo_harness.h"
#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"

namespace ddp::comm {
namespace {

struct Rank {
  RecordingBackend& cpu;
  RecordingBackend& cuda;
  ProcessGroup& pg;
};

void runWithTwoMembers(int world, const std::function<void(int, Rank&)>& fn) {
  LocalGroupOptions cpuOpts;
  cpuOpts.name = "cpu-local";
  LocalGroupOptions cudaOpts;
  cudaOpts.name = "fake-cuda";
  cudaOpts.devices = {DeviceType::kCuda};
  auto cpuGroup = makeLocalGroup(world, cpuOpts);
  auto cudaGroup = makeLocalGroup(world, cudaOpts);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      LocalBackend cpu(cpuGroup, r), cuda(cudaGroup, r);
      RecordingBackend recCpu(cpu), recCuda(cuda);
      auto pg = ProcessGroup::createUnowned({&recCpu, &recCuda});
      ASSERT_TRUE(pg.isOk()) << pg.status();
      Rank rank{recCpu, recCuda, **pg};
      fn(r, rank);
    });
  }
  for (auto& t : threads) t.join();
}

BufferView fakeCuda(float* p, size_t n) { return viewOf(p, n, DType::kF32, Device::cuda(0)); }

std::vector<OpType> types(const std::vector<RecordedOp>& log) {
  std::vector<OpType> t;
  for (const auto& op : log) t.push_back(op.type);
  return t;
}

TEST(ProcessGroupTest, RoutesEachOpByTheDeviceOfItsBuffers) {
  runWithTwoMembers(2, [](int rank, Rank& r) {
    EXPECT_EQ(r.pg.name(), "pg(cpu-local,fake-cuda)");
    EXPECT_TRUE(r.pg.supportsDevice(DeviceType::kCuda));
    std::vector<float> host(3, float(rank + 1)), dev(4, float(10 * (rank + 1))), gathered(8);
    auto w1 = r.pg.allreduce(viewOf(host.data(), 3), ReduceOp::kSum);
    auto w2 = r.pg.allreduce(fakeCuda(dev.data(), 4), ReduceOp::kMax);
    auto w3 = r.pg.barrier();
    auto w4 = r.pg.allgather(fakeCuda(dev.data(), 4), fakeCuda(gathered.data(), 8));
    ASSERT_TRUE(w4->wait().isOk());
    ASSERT_TRUE(w1->wait().isOk() && w2->wait().isOk() && w3->wait().isOk());
    EXPECT_EQ(w1->seq(), 1u);
    EXPECT_EQ(w2->seq(), 2u);
    EXPECT_EQ(w4->seq(), 4u);
    EXPECT_EQ(w4->opType(), OpType::kAllgather);
    for (float x : host) EXPECT_EQ(x, 3.f);
    for (float x : dev) EXPECT_EQ(x, 20.f);
    for (float x : gathered) EXPECT_EQ(x, 20.f);
    float v = float(rank);
    if (rank == 0) {
      ASSERT_TRUE(r.pg.send(viewOf(&v, 1), 1, 0)->wait().isOk());
    } else {
      ASSERT_TRUE(r.pg.recv(viewOf(&v, 1), 0, 0)->wait().isOk());
      EXPECT_EQ(v, 0.f);
    }
    EXPECT_EQ(types(r.cpu.ops()),
              (std::vector<OpType>{OpType::kAllreduce, OpType::kBarrier,
                                   rank == 0 ? OpType::kSend : OpType::kRecv}));
    EXPECT_EQ(types(r.cuda.ops()), (std::vector<OpType>{OpType::kAllreduce, OpType::kAllgather}));
  });
}

TEST(ProcessGroupTest, MixedDevicesInOneOpAreRejected) {
  runWithTwoMembers(2, [](int, Rank& r) {
    std::vector<float> host(2), dev(4);
    Status st = r.pg.allgather(viewOf(host.data(), 2), fakeCuda(dev.data(), 4))->wait();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find("mixes devices (cpu and cuda:0)"), std::string::npos) << st;
    st = r.pg.reduceScatter(fakeCuda(dev.data(), 4), viewOf(host.data(), 2), ReduceOp::kSum)->wait();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(r.cpu.ops().empty());
    EXPECT_TRUE(r.cuda.ops().empty());
  });
}

TEST(ProcessGroupTest, GatherChecksTheOutputDeviceOnTheRootOnly) {
  runWithTwoMembers(2, [](int rank, Rank& r) {
    std::vector<float> in(2, float(rank)), out(rank == 1 ? 4 : 0);
    // Non-root ranks pass an empty CPU view for `out`; only the root's output must match.
    BufferView outView = rank == 1 ? fakeCuda(out.data(), 4) : BufferView{};
    ASSERT_TRUE(r.pg.gather(fakeCuda(in.data(), 2), outView, 1)->wait().isOk());
    if (rank == 1) EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 1}));
    EXPECT_EQ(r.cuda.ops().size(), 1u);
  });
}

TEST(ProcessGroupTest, CpuOnlyGroupGivesAClearErrorForCudaBuffers) {
  runLocalRanks(2, [](int, Backend& cpu) {
    auto pg = ProcessGroup::createUnowned({&cpu});
    ASSERT_TRUE(pg.isOk());
    EXPECT_FALSE((*pg)->supportsDevice(DeviceType::kCuda));
    float x = 1.f;
    Status st = (*pg)->allreduce(fakeCuda(&x, 1), ReduceOp::kSum)->wait();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("no member of pg(local) supports that device"), std::string::npos) << st;
    // Every CPU op still works.
    ASSERT_TRUE((*pg)->allreduce(viewOf(&x, 1), ReduceOp::kSum)->wait().isOk());
    EXPECT_EQ(x, 2.f);
    ASSERT_TRUE((*pg)->barrier()->wait().isOk());
  });
}

TEST(ProcessGroupTest, CoalescingScopeSpansEveryMember) {
  runWithTwoMembers(3, [](int rank, Rank& r) {
    std::vector<float> host(2, 1.f), dev(5, float(rank));
    ASSERT_TRUE(r.pg.startCoalescing().isOk());
    auto a = r.pg.allreduce(viewOf(host.data(), 2), ReduceOp::kSum);
    auto b = r.pg.allreduce(fakeCuda(dev.data(), 5), ReduceOp::kSum);
    auto batch = r.pg.endCoalescing();
    EXPECT_EQ(batch->opType(), OpType::kCoalesced);
    EXPECT_EQ(batch->bytes(), 28u);
    ASSERT_TRUE(batch->wait().isOk());
    EXPECT_TRUE(a->isCompleted() && b->isCompleted());
    for (float x : host) EXPECT_EQ(x, 3.f);
    for (float x : dev) EXPECT_EQ(x, 3.f);
    for (auto* rec : {&r.cpu, &r.cuda}) {
      auto log = rec->ops();
      ASSERT_EQ(log.size(), 2u);
      EXPECT_TRUE(log[0].inCoalescing);
      EXPECT_EQ(log[1].type, OpType::kCoalesced);
    }
    // A second start inside an open scope fails and leaves no member half-open.
    ASSERT_TRUE(r.pg.startCoalescing().isOk());
    EXPECT_EQ(r.pg.startCoalescing().code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(r.pg.endCoalescing()->wait().isOk());
  });
}

TEST(ProcessGroupTest, AbortAbortsEveryMember) {
  runWithTwoMembers(2, [](int rank, Rank& r) {
    float x = 1.f;
    if (rank == 0) {
      r.pg.abort(abortedError("job cancelled"));
      EXPECT_TRUE(r.cpu.isAborted());
      EXPECT_TRUE(r.cuda.isAborted());
      EXPECT_TRUE(r.pg.isAborted());
      EXPECT_EQ(r.pg.allreduce(fakeCuda(&x, 1), ReduceOp::kSum)->wait().code(), StatusCode::kAborted);
    } else {
      // The peer's ops on either member fail fast rather than time out.
      EXPECT_EQ(r.pg.allreduce(viewOf(&x, 1), ReduceOp::kSum)->wait(Deadline::after(10s)).code(),
                StatusCode::kAborted);
      EXPECT_EQ(r.pg.allreduce(fakeCuda(&x, 1), ReduceOp::kSum)->wait(Deadline::after(10s)).code(),
                StatusCode::kAborted);
    }
  });
}

TEST(ProcessGroupTest, RealGlooMemberRunsTheCpuOpsAndTheBarrier) {
  // The CPU member is a real GlooBackend over loopback TCP; the CUDA member is the fake above.
  LocalGroupOptions cudaOpts;
  cudaOpts.name = "fake-cuda";
  cudaOpts.devices = {DeviceType::kCuda};
  auto cudaGroup = makeLocalGroup(3, cudaOpts);
  Status st = test::runRanks(3, [&](int rank, Backend& gloo) {
    LocalBackend cuda(cudaGroup, rank);
    RecordingBackend recGloo(gloo), recCuda(cuda);
    auto pg = ProcessGroup::createUnowned({&recGloo, &recCuda});
    ASSERT_TRUE(pg.isOk()) << pg.status();
    EXPECT_EQ((*pg)->name(), "pg(gloo,fake-cuda)");
    std::vector<double> host(5, rank + 1.0);
    std::vector<float> dev(3, float(rank));
    int64_t flag = rank == 2 ? 1 : 0;
    auto a = (*pg)->allreduce(viewOf(host.data(), 5), ReduceOp::kSum);
    auto b = (*pg)->allreduce(fakeCuda(dev.data(), 3), ReduceOp::kMax);
    auto c = (*pg)->allreduce(viewOf(&flag, 1), ReduceOp::kMax);  // a control flag stays on CPU
    ASSERT_TRUE(a->wait().isOk() && b->wait().isOk() && c->wait().isOk());
    ASSERT_TRUE((*pg)->barrier()->wait().isOk());
    for (double x : host) EXPECT_EQ(x, 6.0);
    for (float x : dev) EXPECT_EQ(x, 2.f);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(types(recGloo.ops()),
              (std::vector<OpType>{OpType::kAllreduce, OpType::kAllreduce, OpType::kBarrier}));
    EXPECT_EQ(types(recCuda.ops()), (std::vector<OpType>{OpType::kAllreduce}));
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(ProcessGroupTest, MembersAreValidated) {
  EXPECT_EQ(ProcessGroup::createUnowned({}).status().code(), StatusCode::kInvalidArgument);
  auto g = makeLocalGroup(2);
  LocalBackend r0(g, 0), r1(g, 1);
  auto mismatch = ProcessGroup::createUnowned({&r0, &r1});
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("disagree"), std::string::npos);
  LocalGroupOptions o;
  o.devices = {DeviceType::kCuda};
  auto cudaOnly = makeLocalGroup(1, o);
  LocalBackend c(cudaOnly, 0);
  EXPECT_EQ(ProcessGroup::createUnowned({&c}).status().code(), StatusCode::kInvalidArgument);
  // Owning form.
  std::vector<std::unique_ptr<Backend>> members;
  members.push_back(std::make_unique<LocalBackend>(makeLocalGroup(1), 0));
  auto owned = ProcessGroup::create(std::move(members));
  ASSERT_TRUE(owned.isOk());
  EXPECT_EQ((*owned)->numMembers(), 1u);
  EXPECT_TRUE((*owned)->barrier()->wait().isOk());
}

}  // namespace
}  // namespace ddp::comm
