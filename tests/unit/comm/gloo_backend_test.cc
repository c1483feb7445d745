// GlooBackend collectives against closed-form results: every op x dtype x world size
// (1, 2, 3, 4) x element count (0; 1 and 4, which go through the shared page, Note [Small ops
// through the page]; odd; large). Ranks run as threads over the in-memory store
// (real Gloo over loopback TCP). Inputs are small integers so every expected value, including
// f16/bf16 sums and products, is exact; averages are checked against the documented rounding
// (sum in the dtype, then one division done in the dtype's arithmetic).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "tests/support/gloo_harness.h"
#include "worker/comm/gloo_backend.h"

namespace ddp::comm {
namespace {

constexpr DType kDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// A typed buffer whose elements are set and read as doubles.
struct Buf {
  DType dtype;
  std::vector<char> bytes;
  Buf(DType d, size_t n) : dtype(d), bytes(n * dtypeSize(d)) {}
  size_t count() const { return bytes.size() / dtypeSize(dtype); }
  BufferView view() { return BufferView{bytes.data(), count(), dtype, Device::cpu()}; }
  void set(size_t i, double v) {
    char* p = bytes.data() + i * dtypeSize(dtype);
    switch (dtype) {
      case DType::kF32: { float x = float(v); std::memcpy(p, &x, 4); break; }
      case DType::kF64: std::memcpy(p, &v, 8); break;
      case DType::kF16: { uint16_t x = floatToHalf(float(v)); std::memcpy(p, &x, 2); break; }
      case DType::kBF16: { uint16_t x = floatToBf16(float(v)); std::memcpy(p, &x, 2); break; }
      case DType::kI32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
      case DType::kI64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
    }
  }
  double get(size_t i) const {
    const char* p = bytes.data() + i * dtypeSize(dtype);
    switch (dtype) {
      case DType::kF32: { float x; std::memcpy(&x, p, 4); return x; }
      case DType::kF64: { double x; std::memcpy(&x, p, 8); return x; }
      case DType::kF16: { uint16_t x; std::memcpy(&x, p, 2); return halfToFloat(x); }
      case DType::kBF16: { uint16_t x; std::memcpy(&x, p, 2); return bf16ToFloat(x); }
      case DType::kI32: { int32_t x; std::memcpy(&x, p, 4); return x; }
      case DType::kI64: { int64_t x; std::memcpy(&x, p, 8); return double(x); }
    }
    return 0;
  }
};

// Input of rank r at element i for reduce op `op`: small integers (negative ones for min/max).
double input(ReduceOp op, int r, size_t i) {
  if (op == ReduceOp::kMin || op == ReduceOp::kMax) return double(int((r * 7 + i) % 5) - 2);
  return double(1 + (r + i) % 3);
}

// avg: the sum divided once in the dtype's arithmetic.
double averaged(DType d, double sum, int world) {
  switch (d) {
    case DType::kF32: return double(float(sum) / float(world));
    case DType::kF64: return sum / world;
    case DType::kF16: return halfToFloat(floatToHalf(float(sum) / float(world)));
    case DType::kBF16: return bf16ToFloat(floatToBf16(float(sum) / float(world)));
    case DType::kI32:
    case DType::kI64: return double(int64_t(sum) / world);
  }
  return 0;
}

double expected(DType d, ReduceOp op, int world, size_t i) {
  double acc = input(op, 0, i);
  for (int r = 1; r < world; ++r) {
    const double v = input(op, r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
    }
  }
  return op == ReduceOp::kAvg ? averaged(d, acc, world) : acc;
}

// Counts the elements that differ; reports the first.
size_t countWrong(const Buf& b, const std::function<double(size_t)>& want, const std::string& what) {
  size_t wrong = 0;
  for (size_t i = 0; i < b.count(); ++i) {
    if (b.get(i) != want(i)) {
      if (wrong == 0) ADD_FAILURE() << what << ": element " << i << " is " << b.get(i) << ", want " << want(i);
      ++wrong;
    }
  }
  return wrong;
}

struct Param {
  int world;
  size_t count;
};

class GlooCollectivesTest : public ::testing::TestWithParam<Param> {};

TEST_P(GlooCollectivesTest, AllreduceEveryOpAndDtype) {
  const auto [world, count] = GetParam();
  Status st = test::runRanks(world, [&, world = world, count = count](int rank, Backend& b) {
    // Issue everything first, then wait: ops run asynchronously in issue order.
    std::vector<std::unique_ptr<Buf>> bufs;
    std::vector<WorkPtr> works;
    for (DType d : kDTypes) {
      for (ReduceOp op : kOps) {
        auto buf = std::make_unique<Buf>(d, count);
        for (size_t i = 0; i < count; ++i) buf->set(i, input(op, rank, i));
        works.push_back(b.allreduce(buf->view(), op));
        bufs.push_back(std::move(buf));
      }
    }
    size_t k = 0;
    for (DType d : kDTypes) {
      for (ReduceOp op : kOps) {
        Status ws = works[k]->wait(Deadline::after(30s));
        ASSERT_TRUE(ws.isOk()) << ws;
        EXPECT_EQ(works[k]->opType(), OpType::kAllreduce);
        const std::string what = std::string("allreduce ") + dtypeName(d) + " " + reduceOpName(op) + " rank " + std::to_string(rank);
        EXPECT_EQ(countWrong(*bufs[k], [&](size_t i) { return expected(d, op, world, i); }, what), 0u);
        ++k;
      }
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCollectivesTest, ReduceScatterEveryOpAndDtype) {
  const auto [world, count] = GetParam();
  Status st = test::runRanks(world, [&, world = world, count = count](int rank, Backend& b) {
    for (DType d : kDTypes) {
      for (ReduceOp op : kOps) {
        Buf in(d, count * world), out(d, count);
        for (size_t i = 0; i < in.count(); ++i) in.set(i, input(op, rank, i));
        Status ws = b.reduceScatter(in.view(), out.view(), op)->wait(Deadline::after(30s));
        ASSERT_TRUE(ws.isOk()) << ws;
        const std::string what = std::string("reduce_scatter ") + dtypeName(d) + " " + reduceOpName(op);
        EXPECT_EQ(countWrong(out, [&](size_t i) { return expected(d, op, world, rank * count + i); }, what), 0u);
        // The input is left untouched.
        EXPECT_EQ(countWrong(in, [&](size_t i) { return input(op, rank, i); }, what + " input"), 0u);
      }
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCollectivesTest, BroadcastAllgatherGatherBarrierEveryDtype) {
  const auto [world, count] = GetParam();
  Status st = test::runRanks(world, [&, world = world, count = count](int rank, Backend& b) {
    auto value = [](int r, size_t i) { return double((r * 5 + i) % 11); };
    for (DType d : kDTypes) {
      for (int root : {0, world - 1}) {
        Buf x(d, count);
        for (size_t i = 0; i < count; ++i) x.set(i, value(rank, i));
        ASSERT_TRUE(b.broadcast(x.view(), root)->wait(Deadline::after(30s)).isOk());
        EXPECT_EQ(countWrong(x, [&](size_t i) { return value(root, i); }, std::string("broadcast ") + dtypeName(d)), 0u);
      }
      Buf in(d, count), out(d, count * world);
      for (size_t i = 0; i < count; ++i) in.set(i, value(rank, i));
      ASSERT_TRUE(b.allgather(in.view(), out.view())->wait(Deadline::after(30s)).isOk());
      auto gathered = [&](size_t i) { return value(int(i / count), i % count); };
      EXPECT_EQ(countWrong(out, gathered, std::string("allgather ") + dtypeName(d)), 0u);

      const int root = world / 2;
      Buf gout(d, rank == root ? count * world : 0);
      Status gs = b.gather(in.view(), gout.view(), root)->wait(Deadline::after(30s));
      ASSERT_TRUE(gs.isOk()) << gs;
      if (rank == root) EXPECT_EQ(countWrong(gout, gathered, std::string("gather ") + dtypeName(d)), 0u);
    }
    EXPECT_TRUE(b.barrier()->wait(Deadline::after(30s)).isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (int w : {1, 2, 3, 4}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{4}, size_t{37}, size_t{100000}}) out.push_back({w, n});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(WorldsAndCounts, GlooCollectivesTest, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return "world" + std::to_string(info.param.world) + "_n" + std::to_string(info.param.count);
                         });

// Note [Ring collectives]: buffers large enough that every chunk of the allreduce goes in
// several segments (streamed through the two scratch segments), a broadcast taking the
// pipelined ring, and uneven chunks (counts not divisible by the world), against closed forms.
// The average is divided segment by segment by each chunk's owner before the allgather. The
// ranks are threads of one process, so with sameHostMemory the allreduces read peers' memory
// (Note [Same-host allreduce]); without it they take the TCP ring.
class GlooLargeBufferTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(GlooLargeBufferTest, AllreduceBroadcastAndAllgatherStreamInSegments) {
  const auto [world, sameHost] = GetParam();
  auto configure = [sameHost = sameHost](GlooOptions& o) { o.sameHostMemory = sameHost; };
  Status st = test::runRanks(world, configure, [world = world, sameHost = sameHost](int rank, Backend& b) {
    EXPECT_EQ(dynamic_cast<GlooBackend&>(b).readsPeerMemory(), sameHost);
    EXPECT_EQ(dynamic_cast<GlooBackend&>(b).sharesPage(), sameHost);
    constexpr size_t kCount = 1300007;  // 5.2 MB of f32: at least 2 segments per chunk, above
                                        // kCrossMemoryMinBytes
    std::vector<float> f(kCount);
    std::vector<double> d(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      f[i] = float((i * 7 + static_cast<size_t>(rank)) % 1000);
      d[i] = double((i + static_cast<size_t>(rank) * 13) % 977);
    }
    std::vector<float> avg = f;
    auto wf = b.allreduce(viewOf(f.data(), f.size()), ReduceOp::kSum);
    auto wd = b.allreduce(viewOf(d.data(), d.size()), ReduceOp::kMax);
    auto wa = b.allreduce(viewOf(avg.data(), avg.size()), ReduceOp::kAvg);
    ASSERT_TRUE(wf->wait(Deadline::after(60s)).isOk());
    ASSERT_TRUE(wd->wait(Deadline::after(60s)).isOk());
    ASSERT_TRUE(wa->wait(Deadline::after(60s)).isOk());
    size_t wrongF = 0, wrongD = 0, wrongA = 0;
    for (size_t i = 0; i < kCount; ++i) {
      double sum = 0, mx = 0;
      for (int r = 0; r < world; ++r) {
        sum += double((i * 7 + static_cast<size_t>(r)) % 1000);
        mx = std::max(mx, double((i + static_cast<size_t>(r) * 13) % 977));
      }
      wrongF += f[i] != float(sum);
      wrongD += d[i] != mx;
      wrongA += avg[i] != float(sum) / float(world);
    }
    EXPECT_EQ(wrongF, 0u) << "f32 sum, rank " << rank;
    EXPECT_EQ(wrongA, 0u) << "f32 average, rank " << rank;
    EXPECT_EQ(wrongD, 0u) << "f64 max, rank " << rank;

    const int root = world - 1;
    std::vector<int32_t> x(kCount / 2 + 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = rank == root ? int32_t(i * 3) : -1;
    ASSERT_TRUE(b.broadcast(viewOf(x.data(), x.size()), root)->wait(Deadline::after(60s)).isOk());
    size_t wrongB = 0;
    for (size_t i = 0; i < x.size(); ++i) wrongB += x[i] != int32_t(i * 3);
    EXPECT_EQ(wrongB, 0u) << "broadcast, rank " << rank;

    std::vector<float> in(300001, float(rank + 1)), out(in.size() * static_cast<size_t>(world), -1.f);
    ASSERT_TRUE(b.allgather(viewOf(in.data(), in.size()), viewOf(out.data(), out.size()))->wait(Deadline::after(60s)).isOk());
    size_t wrongG = 0;
    for (size_t i = 0; i < out.size(); ++i) wrongG += out[i] != float(i / in.size() + 1);
    EXPECT_EQ(wrongG, 0u) << "allgather, rank " << rank;
  });
  EXPECT_TRUE(st.isOk()) << st;
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooLargeBufferTest, ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Bool()));

// Note [Direct small allreduce]: over TCP (no shared page), a small allreduce folds the ranks'
// buffers in rank order on every rank. 1e8f + 1 rounds back to 1e8f, so ((1e8 + 1) + -1e8) + 1
// is exactly 1 in f32, while a ring's chunks start their sums at other ranks (1 + -1e8 rounds to
// -1e8, ...) and get 0 or 2. Every element, on every rank, must be exactly 1.
TEST(GlooBackendTest, SmallAllreducesOverTcpFoldInRankOrderOnEveryRank) {
  const float in[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  auto tcpOnly = [](GlooOptions& o) { o.sameHostMemory = false; };
  Status st = test::runRanks(4, tcpOnly, [&](int rank, Backend& b) {
    EXPECT_FALSE(dynamic_cast<GlooBackend&>(b).sharesPage());
    for (size_t count : {size_t{1}, size_t{3}, size_t{4096}}) {
      std::vector<float> x(count, in[rank]);
      ASSERT_TRUE(b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(30s)).isOk());
      size_t wrong = 0;
      for (float v : x) wrong += v != 1.0f;
      EXPECT_EQ(wrong, 0u) << count << " elements on rank " << rank;
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooBackendTest, SequenceNumbersAndOpTypes) {
  Status st = test::runRanks(2, [](int, Backend& b) {
    std::vector<float> x(4, 1.f);
    auto w1 = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum);
    auto w2 = b.barrier();
    EXPECT_EQ(w1->seq() + 1, w2->seq());
    EXPECT_EQ(w1->bytes(), 16u);
    EXPECT_EQ(w2->opType(), OpType::kBarrier);
    EXPECT_TRUE(w2->wait().isOk());
    EXPECT_TRUE(w1->isCompleted());  // issue order: the earlier op finished first
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooBackendTest, InPlaceAllgather) {
  Status st = test::runRanks(3, [](int rank, Backend& b) {
    std::vector<int32_t> out(3 * 4, -1);
    for (int i = 0; i < 4; ++i) out[rank * 4 + i] = rank * 10 + i;
    ASSERT_TRUE(b.allgather(viewOf(out.data() + rank * 4, 4), viewOf(out.data(), out.size()))->wait().isOk());
    for (int r = 0; r < 3; ++r) {
      for (int i = 0; i < 4; ++i) EXPECT_EQ(out[r * 4 + i], r * 10 + i);
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooBackendTest, BadArgumentsFailWithoutRunning) {
  Status st = test::runRanks(2, [](int rank, Backend& b) {
    std::vector<float> x(4), y(5);
    auto w = b.allgather(viewOf(x.data(), 4), viewOf(y.data(), 5));
    EXPECT_EQ(w->status().code(), StatusCode::kInvalidArgument) << w->status();
    EXPECT_EQ(b.broadcast(viewOf(x.data(), 4), 2)->status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(b.send(viewOf(x.data(), 4), rank, 0)->status().code(), StatusCode::kInvalidArgument);
    BufferView onGpu = viewOf(x.data(), 4);
    onGpu.device = Device::cuda(0);
    EXPECT_EQ(b.allreduce(onGpu, ReduceOp::kSum)->status().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(b.supportsDevice(DeviceType::kCuda));
    // The communicator is still healthy.
    EXPECT_TRUE(b.allreduce(viewOf(x.data(), 4), ReduceOp::kSum)->wait().isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
}

}  // namespace
}  // namespace ddp::comm
