// BatchedPowerSgdHook: the bucket as one zero-padded square matrix. Checked against closed forms
// (the side, exact reproduction of low-rank and full-rank squares), the error-feedback identity,
// and ranks agreeing with several buckets in flight (LocalBackend ranks as threads).
#include "worker/ddp/batched_powersgd_hook.h"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/support/local_backend.h"
#include "tests/unit/ddp/powersgd_test_util.h"

namespace ddp {
namespace {

using testing_util::lowRank;
using testing_util::maxAbsDiff;
using testing_util::randomVector;
using testing_util::runStep;
using testing_util::runStepSequential;
using testing_util::TestBucket;

PowerSgdOptions quickOptions(int64_t rank) {
  PowerSgdOptions o;
  o.matrixApproximationRank = rank;
  o.startPowerSgdIter = 2;
  return o;
}

TEST(BatchedPowerSgdTest, SquareSideIsCeilSqrt) {
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(0), 0u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(1), 1u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(2), 2u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(16), 4u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(17), 5u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(4000000), 2000u);
  EXPECT_EQ(BatchedPowerSgdHook::squareSide(4000001), 2001u);
}

// A 144-element bucket whose 12 x 12 square view has rank 2 on every rank (shared row and
// column spaces): rank-2 batched PowerSGD returns the average exactly.
TEST(BatchedPowerSgdTest, LowRankSquareIsReproducedAndRanksAgree) {
  const int world = 3;
  const size_t side = 12, k = 2;
  const auto a = randomVector(side * k, 1), b = randomVector(side * k, 2);
  std::vector<std::vector<float>> out(world);
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    BatchedPowerSgdHook hook(backend, quickOptions(k));
    TestBucket bucket(0, true, {{"w", {8, 16}}, {"b", {16}}});  // 128 + 16 = 144 = 12^2
    for (int step = 0; step < 5; ++step) {
      std::vector<std::vector<float>> grads;
      for (int r = 0; r < world; ++r) {
        const auto bc = lowRank(b, randomVector(k * k, 20 * step + r), side, k, k);
        grads.push_back(lowRank(a, bc, side, side, k));
      }
      bucket.buffer() = grads[rank];
      ASSERT_TRUE(runStep(hook, {&bucket}).isOk());
      std::vector<float> avg(side * side, 0.f);
      for (int r = 0; r < world; ++r)
        for (size_t i = 0; i < avg.size(); ++i) avg[i] += grads[r][i] / world;
      const double scale = testing_util::norm(avg.data(), avg.size()) / side;
      EXPECT_LT(maxAbsDiff(bucket.buffer().data(), avg.data(), avg.size()), 1e-4 * scale) << "step " << step;
    }
    const CompressionStats s = hook.compressionStats();
    EXPECT_EQ(s.numelBeforeCompression, 3u * 144u);  // three compressed steps
    EXPECT_EQ(s.numelAfterCompression, 3u * 2u * 12u * 2u);
    out[rank] = bucket.buffer();
  });
  for (int r = 1; r < world; ++r) EXPECT_EQ(out[r], out[0]);
}

// At rank == side the approximation is the full matrix, padding included: the output is the
// plain average whatever the values (here 10 elements padded to 4 x 4).
TEST(BatchedPowerSgdTest, FullRankPaddedSquareIsTheAverage) {
  const int world = 2;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    BatchedPowerSgdHook hook(backend, quickOptions(4));
    TestBucket bucket(0, true, {{"x", {10}}});
    for (int step = 0; step < 4; ++step) {
      std::vector<std::vector<float>> grads;
      for (int r = 0; r < world; ++r) grads.push_back(randomVector(10, 40 * step + r));
      bucket.buffer() = grads[rank];
      ASSERT_TRUE(runStep(hook, {&bucket}).isOk());
      for (size_t i = 0; i < 10; ++i) {
        EXPECT_NEAR(bucket.buffer()[i], (grads[0][i] + grads[1][i]) / 2, 1e-5) << "step " << step << " i " << i;
      }
    }
  });
}

// out_t = avg(g_t) + avg(e_{t-1}) - avg(e_t): the outputs plus the final mean error sum to the
// true sum, while without feedback the running sum drifts.
TEST(BatchedPowerSgdTest, ErrorFeedbackRunningSumTracksTrueSum) {
  const int world = 2, steps = 30;
  const size_t n = 100;
  std::vector<float> outputSum(n, 0.f), noEfSum(n, 0.f), trueSum(n, 0.f);
  std::vector<std::vector<float>> errors(world);
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    BatchedPowerSgdHook hook(backend, quickOptions(1));
    PowerSgdOptions o = quickOptions(1);
    o.useErrorFeedback = false;
    BatchedPowerSgdHook plain(backend, o);
    TestBucket b(0, true, {{"w", {10, 6}}, {"v", {40}}});
    TestBucket c(0, true, {{"w", {10, 6}}, {"v", {40}}});
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < world; ++r) grads.push_back(randomVector(n, 900 + r));
    for (int step = 0; step < steps; ++step) {
      b.buffer() = grads[rank];
      c.buffer() = grads[rank];
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      ASSERT_TRUE(runStep(plain, {&c}).isOk());
      if (rank == 0 && step >= 2) {
        for (size_t i = 0; i < n; ++i) {
          outputSum[i] += b.buffer()[i];
          noEfSum[i] += c.buffer()[i];
          trueSum[i] += (grads[0][i] + grads[1][i]) / world;
        }
      }
    }
    const PowerSgdState s = hook.stateSnapshot();
    std::vector<float> e = s.tensors.at("w").error;
    e.insert(e.end(), s.tensors.at("v").error.begin(), s.tensors.at("v").error.end());
    errors[rank] = e;
  });
  double diff = 0, drift = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += std::pow(outputSum[i] + (errors[0][i] + errors[1][i]) / world - trueSum[i], 2);
    drift += std::pow(noEfSum[i] - trueSum[i], 2);
  }
  const double scale = testing_util::norm(trueSum.data(), n);
  EXPECT_LT(std::sqrt(diff), 1e-4 * scale);
  EXPECT_GT(std::sqrt(drift), 0.3 * scale);
}

// An f16 bucket is compressed in f32: from the start iteration on, its result is the f32
// hook's result on the same rounded inputs, rounded.
TEST(BatchedPowerSgdTest, HalfBucketMatchesF32Rounded) {
  comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
    BatchedPowerSgdHook f32Hook(backend, quickOptions(2)), halfHook(backend, quickOptions(2));
    TestBucket ref(0, true, {{"w", {6, 5}}, {"b", {6}}});
    std::vector<uint16_t> storage(ref.buffer().size());
    Parameter w = ref.params()[0], b = ref.params()[1];
    for (int step = 0; step < 5; ++step) {
      const auto x = randomVector(storage.size(), 80 * step + rank);
      for (size_t i = 0; i < x.size(); ++i) {
        storage[i] = floatToHalf(x[i]);
        ref.buffer()[i] = halfToFloat(storage[i]);
      }
      comm::BufferView all = comm::viewOf(storage.data(), storage.size(), DType::kF16);
      GradBucket hb(0, true, all, {all.slice(0, 30), all.slice(30, 6)}, {&w, &b}, ref.gradBucket().identity());
      auto r = halfHook.run(hb);
      ASSERT_TRUE(r.isOk()) << r.status();
      ASSERT_TRUE(r->work->wait().isOk());
      ASSERT_TRUE(r->finish().isOk());
      ASSERT_TRUE(runStep(f32Hook, {&ref}).isOk());
      if (step < 2) continue;
      for (size_t i = 0; i < storage.size(); ++i) ASSERT_EQ(storage[i], floatToHalf(ref.buffer()[i])) << step << " " << i;
    }
  });
}

TEST(BatchedPowerSgdTest, SeveralBucketsInFlightMatchSequential) {
  const int world = 3;
  std::vector<std::vector<float>> overlapped(world), sequential(world);
  for (bool overlap : {true, false}) {
    comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
      BatchedPowerSgdHook hook(backend, quickOptions(2));
      TestBucket b0(0, false, {{"c.w", {9, 11}}, {"c.b", {9}}});
      TestBucket b1(1, false, {{"b.w", {30, 7}}});
      TestBucket b2(2, true, {{"a.w", {5, 5}}, {"a.b", {5}}});
      for (int step = 0; step < 5; ++step) {
        uint32_t seed = 500 + 100 * step + rank;
        for (auto* b : {&b0, &b1, &b2}) b->buffer() = randomVector(b->buffer().size(), seed += 10);
        ASSERT_TRUE((overlap ? runStep(hook, {&b0, &b1, &b2}) : runStepSequential(hook, {&b0, &b1, &b2})).isOk());
      }
      std::vector<float> all;
      for (auto* b : {&b0, &b1, &b2}) all.insert(all.end(), b->buffer().begin(), b->buffer().end());
      (overlap ? overlapped : sequential)[rank] = all;
    });
  }
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(overlapped[r], sequential[r]);
    EXPECT_EQ(overlapped[r], overlapped[0]);
  }
}

}  // namespace
}  // namespace ddp
