// LocalBackend against closed forms: every rank r contributes values built from r, and the
// expected result of each collective is computed independently here.
#include "tests/support/local_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <numeric>

namespace ddp::comm {
namespace {

class LocalBackendWorldTest : public ::testing::TestWithParam<int> {};

// Sizes 0, 1, odd and a few hundred.
const size_t kSizes[] = {0, 1, 7, 300};

TEST_P(LocalBackendWorldTest, AllreduceEveryOpF32) {
  const int world = GetParam();
  runLocalRanks(world, [&](int rank, Backend& b) {
    for (size_t n : kSizes) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                          ReduceOp::kProduct}) {
        std::vector<float> buf(n);
        for (size_t i = 0; i < n; ++i) buf[i] = float(rank + 1) + 0.5f * float(i % 3);
        ASSERT_TRUE(b.allreduce(viewOf(buf.data(), n), op)->wait().isOk());
        for (size_t i = 0; i < n; ++i) {
          double expect = op == ReduceOp::kProduct ? 1.0 : 0.0;
          double mn = 1e30, mx = -1e30;
          for (int r = 0; r < world; ++r) {
            double v = double(r + 1) + 0.5 * double(i % 3);
            if (op == ReduceOp::kProduct) expect *= v; else expect += v;
            mn = std::min(mn, v);
            mx = std::max(mx, v);
          }
          if (op == ReduceOp::kAvg) expect /= world;
          if (op == ReduceOp::kMin) expect = mn;
          if (op == ReduceOp::kMax) expect = mx;
          ASSERT_NEAR(buf[i], expect, 1e-4 * std::abs(expect)) << reduceOpName(op) << " i=" << i;
        }
      }
    }
  });
}

TEST_P(LocalBackendWorldTest, AllreduceOtherDtypes) {
  const int world = GetParam();
  runLocalRanks(world, [&](int rank, Backend& b) {
    const size_t n = 9;
    std::vector<double> d(n, rank + 0.25);
    std::vector<int32_t> i32(n, rank + 1);
    std::vector<int64_t> i64(n, int64_t(1) << 40);
    std::vector<uint16_t> h(n, floatToHalf(0.5f * float(rank + 1)));
    std::vector<uint16_t> bf(n, floatToBf16(float(rank + 1)));
    ASSERT_TRUE(b.allreduce(viewOf(d.data(), n), ReduceOp::kSum)->wait().isOk());
    ASSERT_TRUE(b.allreduce(viewOf(i32.data(), n), ReduceOp::kMax)->wait().isOk());
    ASSERT_TRUE(b.allreduce(viewOf(i64.data(), n), ReduceOp::kSum)->wait().isOk());
    ASSERT_TRUE(b.allreduce(viewOf(h.data(), n, DType::kF16), ReduceOp::kAvg)->wait().isOk());
    ASSERT_TRUE(b.allreduce(viewOf(bf.data(), n, DType::kBF16), ReduceOp::kSum)->wait().isOk());
    double half = 0, sumR = 0;
    for (int r = 0; r < world; ++r) {
      half += 0.5 * (r + 1);
      sumR += r + 1;
    }
    for (size_t i = 0; i < n; ++i) {
      EXPECT_DOUBLE_EQ(d[i], world * (world - 1) / 2.0 + 0.25 * world);
      EXPECT_EQ(i32[i], world);
      EXPECT_EQ(i64[i], int64_t(world) << 40);
      EXPECT_NEAR(halfToFloat(h[i]), half / world, 1e-3);
      EXPECT_NEAR(bf16ToFloat(bf[i]), sumR, 1e-2 * sumR);
    }
  });
}

TEST(LocalBackendTest, HalfAccumulatesInF32) {
  // 2048 + 1 + 1 in f16 step by step would round back to 2048 each time; in f32 it is 2050,
  // which f16 represents exactly.
  runLocalRanks(3, [&](int rank, Backend& b) {
    uint16_t v = floatToHalf(rank == 0 ? 2048.f : 1.f);
    ASSERT_TRUE(b.allreduce(viewOf(&v, 1, DType::kF16), ReduceOp::kSum)->wait().isOk());
    EXPECT_EQ(halfToFloat(v), 2050.f);
  });
}

TEST_P(LocalBackendWorldTest, BroadcastAllgatherReduceScatterGather) {
  const int world = GetParam();
  runLocalRanks(world, [&](int rank, Backend& b) {
    for (size_t n : kSizes) {
      const int root = world - 1;
      std::vector<int64_t> bc(n, rank);
      ASSERT_TRUE(b.broadcast(viewOf(bc.data(), n), root)->wait().isOk());
      for (auto v : bc) ASSERT_EQ(v, root);

      std::vector<int32_t> in(n), out(n * world, -1);
      for (size_t i = 0; i < n; ++i) in[i] = rank * 1000 + int32_t(i);
      ASSERT_TRUE(b.allgather(viewOf(in.data(), n), viewOf(out.data(), n * world))->wait().isOk());
      for (int r = 0; r < world; ++r) {
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], r * 1000 + int32_t(i));
      }

      std::vector<float> rsIn(n * world), rsOut(n);
      for (size_t i = 0; i < n * world; ++i) rsIn[i] = float(rank) + float(i);
      ASSERT_TRUE(b.reduceScatter(viewOf(rsIn.data(), n * world), viewOf(rsOut.data(), n),
                                  ReduceOp::kSum)->wait().isOk());
      for (size_t i = 0; i < n; ++i) {
        float expect = float(world * (world - 1) / 2) + float(world) * float(rank * n + i);
        ASSERT_FLOAT_EQ(rsOut[i], expect);
      }

      std::vector<double> gOut(rank == 0 ? n * world : 0, -1);
      std::vector<double> gIn(n, rank + 0.5);
      ASSERT_TRUE(b.gather(viewOf(gIn.data(), n), viewOf(gOut.data(), gOut.size()), 0)->wait().isOk());
      if (rank == 0) {
        for (int r = 0; r < world; ++r) {
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(gOut[r * n + i], r + 0.5);
        }
      }
      ASSERT_TRUE(b.barrier()->wait().isOk());
    }
  });
}

TEST_P(LocalBackendWorldTest, InPlaceAllgatherAndReduceScatter) {
  const int world = GetParam();
  runLocalRanks(world, [&](int rank, Backend& b) {
    const size_t n = 5;
    std::vector<float> buf(n * world, -1.f);
    for (size_t i = 0; i < n; ++i) buf[rank * n + i] = float(rank * 10 + i);
    BufferView all = viewOf(buf.data(), n * world);
    ASSERT_TRUE(b.allgather(all.slice(rank * n, n), all)->wait().isOk());
    for (int r = 0; r < world; ++r) {
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(buf[r * n + i], float(r * 10 + i));
    }
    // Every rank now holds the same buffer; reduce-scatter it into its own chunk.
    ASSERT_TRUE(b.reduceScatter(all, all.slice(rank * n, n), ReduceOp::kSum)->wait().isOk());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(buf[rank * n + i], float(world * (rank * 10 + i)));
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, LocalBackendWorldTest, ::testing::Values(1, 2, 3, 4));

TEST(LocalBackendTest, AsyncOpsRunInIssueOrder) {
  // Issue allreduce then broadcast on the same buffer without waiting in between: the broadcast
  // must see the reduced value.
  runLocalRanks(3, [&](int rank, Backend& b) {
    float v = float(rank + 1);
    auto w1 = b.allreduce(viewOf(&v, 1), ReduceOp::kSum);
    auto w2 = b.broadcast(viewOf(&v, 1), 2);
    ASSERT_TRUE(w2->wait().isOk());
    ASSERT_TRUE(w1->isCompleted());
    EXPECT_EQ(v, 6.f);
    EXPECT_LT(w1->seq(), w2->seq());
    EXPECT_EQ(w1->opType(), OpType::kAllreduce);
    EXPECT_EQ(w1->bytes(), 4u);
  });
}

TEST(LocalBackendTest, SendRecvMatchedByTag) {
  runLocalRanks(2, [&](int rank, Backend& b) {
    if (rank == 0) {
      int64_t a = 11, c = 22;
      auto s1 = b.send(viewOf(&a, 1), 1, /*tag=*/7);
      auto s2 = b.send(viewOf(&c, 1), 1, /*tag=*/8);
      ASSERT_TRUE(s1->wait().isOk());
      ASSERT_TRUE(s2->wait().isOk());
    } else {
      int64_t x = 0, y = 0;
      auto r2 = b.recv(viewOf(&y, 1), 0, 8);  // posted first, matched by tag
      auto r1 = b.recv(viewOf(&x, 1), 0, 7);
      ASSERT_TRUE(r1->wait().isOk());
      ASSERT_TRUE(r2->wait().isOk());
      EXPECT_EQ(x, 11);
      EXPECT_EQ(y, 22);
    }
  });
}

TEST(LocalBackendTest, MismatchFailsOnEveryRank) {
  runLocalRanks(3, [&](int rank, Backend& b) {
    std::vector<float> buf(rank == 1 ? 4 : 5, 1.f);
    Status st = b.allreduce(viewOf(buf.data(), buf.size()), ReduceOp::kSum)->wait();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find("disagree"), std::string::npos) << st;
    // The group is still usable afterwards.
    float v = 1.f;
    ASSERT_TRUE(b.allreduce(viewOf(&v, 1), ReduceOp::kSum)->wait().isOk());
    EXPECT_EQ(v, 3.f);
  });
}

TEST(LocalBackendTest, BadArgumentsFailLocallyAndPeersFast) {
  runLocalRanks(2, [&](int rank, Backend& b) {
    float v = 1.f;
    auto w = b.broadcast(viewOf(&v, 1), rank == 0 ? 5 : 0);
    Status st = w->wait(Deadline::after(5s));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    if (rank == 0) EXPECT_NE(st.message().find("root 5"), std::string::npos) << st;
    if (rank == 1) EXPECT_NE(st.message().find("rank 0"), std::string::npos) << st;
    std::vector<float> out(3);
    EXPECT_EQ(b.allgather(viewOf(&v, 1), viewOf(out.data(), 3))->wait().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(b.send(viewOf(&v, 1), rank, 0)->wait().code(), StatusCode::kInvalidArgument);
  });
}

TEST(LocalBackendTest, MissingRankTimesOutNamingIt) {
  runLocalRanks(3, [&](int rank, Backend& b) {
    if (rank == 2) return;  // never issues the collective
    float v = 1.f;
    OpOptions opts;
    opts.timeout = 50ms;
    auto start = std::chrono::steady_clock::now();
    Status st = b.allreduce(viewOf(&v, 1), ReduceOp::kSum, opts)->wait(Deadline::after(5s));
    EXPECT_EQ(st.code(), StatusCode::kTimeout) << st;
    EXPECT_NE(st.message().find("waiting for ranks 2"), std::string::npos) << st;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  });
}

TEST(LocalBackendTest, InjectedClockDrivesTimeouts) {
  FakeClock clock;
  LocalGroupOptions opts;
  opts.clock = &clock;
  opts.timeout = std::chrono::minutes(10);
  runLocalRanks(2, [&](int rank, Backend& b) {
    if (rank == 1) return;  // never joins
    float v = 1.f;
    auto w = b.allreduce(viewOf(&v, 1), ReduceOp::kSum);
    EXPECT_EQ(w->wait(Deadline::after(20ms)).code(), StatusCode::kTimeout);  // caller's deadline
    EXPECT_FALSE(w->isCompleted());
    clock.advance(std::chrono::minutes(11));  // the op's own 10-minute timeout passes
    Status st = w->wait(Deadline::after(5s));
    EXPECT_EQ(st.code(), StatusCode::kTimeout) << st;
    EXPECT_NE(st.message().find("10.0m"), std::string::npos) << st;
  }, opts);
}

TEST(LocalBackendTest, RecvWithoutSendTimesOut) {
  runLocalRanks(2, [&](int rank, Backend& b) {
    if (rank == 0) return;
    float v = 0;
    OpOptions opts;
    opts.timeout = 30ms;
    EXPECT_EQ(b.recv(viewOf(&v, 1), 0, 3, opts)->wait(Deadline::after(5s)).code(), StatusCode::kTimeout);
  });
}

TEST(LocalBackendTest, AbortReleasesPeersAndFailsFutureOps) {
  std::atomic<bool> issued{false};
  runLocalRanks(3, [&](int rank, Backend& b) {
    float v = 1.f;
    if (rank == 0) {
      auto w = b.allreduce(viewOf(&v, 1), ReduceOp::kSum);  // rank 2 never joins
      while (!issued.load()) std::this_thread::sleep_for(1ms);
      b.abort(abortedError("hang detected"));
      Status st = w->wait(Deadline::after(5s));
      EXPECT_EQ(st.code(), StatusCode::kAborted);
      EXPECT_EQ(st.message(), "hang detected");
      EXPECT_TRUE(b.isAborted());
      EXPECT_EQ(b.barrier()->wait(Deadline::after(5s)).code(), StatusCode::kAborted);
      b.abort(abortedError("again"));  // idempotent
    } else if (rank == 1) {
      auto w = b.allreduce(viewOf(&v, 1), ReduceOp::kSum);
      issued = true;
      Status st = w->wait(Deadline::after(5s));
      EXPECT_EQ(st.code(), StatusCode::kAborted) << st;
      EXPECT_NE(st.message().find("rank 0 aborted"), std::string::npos) << st;
      EXPECT_FALSE(b.isAborted());
      // Future collectives need rank 0: they fail fast too.
      EXPECT_EQ(b.barrier()->wait(Deadline::after(5s)).code(), StatusCode::kAborted);
    }
  });
}

TEST(LocalBackendTest, CoalescedOpsFireAtEndWithOneWork) {
  runLocalRanks(2, [&](int rank, Backend& b) {
    std::vector<float> a(4, float(rank + 1)), c(3, 2.f);
    ASSERT_TRUE(b.startCoalescing().isOk());
    EXPECT_EQ(b.startCoalescing().code(), StatusCode::kFailedPrecondition);
    auto wa = b.allreduce(viewOf(a.data(), 4), ReduceOp::kSum);
    auto wc = b.allreduce(viewOf(c.data(), 3), ReduceOp::kProduct);
    std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(wa->isCompleted());  // held until the scope ends
    auto batch = b.endCoalescing();
    EXPECT_EQ(batch->opType(), OpType::kCoalesced);
    EXPECT_EQ(batch->bytes(), 28u);
    ASSERT_TRUE(batch->wait().isOk());
    EXPECT_TRUE(wa->isCompleted() && wc->isCompleted());
    for (float x : a) EXPECT_EQ(x, 3.f);
    for (float x : c) EXPECT_EQ(x, 4.f);
    EXPECT_EQ(b.endCoalescing()->wait().code(), StatusCode::kFailedPrecondition);
    {
      CoalescingScope scope(b);  // sync style: the destructor waits
      (void)b.allreduce(viewOf(a.data(), 4), ReduceOp::kSum);
    }
    for (float x : a) EXPECT_EQ(x, 6.f);
  });
}

TEST(LocalBackendTest, DevicesAreOptIn) {
  LocalGroupOptions opts;
  opts.name = "fake-nccl";
  opts.devices = {DeviceType::kCuda};
  runLocalRanks(1, [&](int, Backend& b) {
    EXPECT_EQ(b.name(), "fake-nccl");
    EXPECT_TRUE(b.supportsDevice(DeviceType::kCuda));
    EXPECT_FALSE(b.supportsDevice(DeviceType::kCpu));
    float v = 1;
    EXPECT_EQ(b.allreduce(viewOf(&v, 1), ReduceOp::kSum)->wait().code(), StatusCode::kInvalidArgument);
  }, opts);
}

}  // namespace
}  // namespace ddp::comm
