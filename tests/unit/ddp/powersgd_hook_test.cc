// PowerSgdHook: options, rate test, start iteration, exactness on low-rank gradients, error
// feedback, uncompressed tensors, statistics, ranks agreeing with several buckets in flight.
// Multi-rank cases run over LocalBackend (ranks as threads, real reductions in shared memory).
#include "worker/ddp/powersgd_hook.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"
#include "tests/unit/ddp/powersgd_test_util.h"
#include "worker/ddp/default_hooks.h"

namespace ddp {
namespace {

using testing_util::lowRank;
using testing_util::maxAbsDiff;
using testing_util::randomVector;
using testing_util::runStep;
using testing_util::runStepSequential;
using testing_util::TestBucket;

PowerSgdOptions quickOptions(int64_t rank, int64_t start = 2) {
  PowerSgdOptions o;
  o.matrixApproximationRank = rank;
  o.startPowerSgdIter = start;
  return o;
}

TEST(PowerSgdOptionsTest, DefaultsMatchTheReference) {
  PowerSgdOptions o;
  EXPECT_EQ(o.matrixApproximationRank, 1);
  EXPECT_EQ(o.startPowerSgdIter, 1000);
  EXPECT_EQ(o.minCompressionRate, 2.0);
  EXPECT_TRUE(o.useErrorFeedback);
  EXPECT_TRUE(o.warmStart);
  EXPECT_EQ(o.orthogonalizationEpsilon, 0.0f);
  EXPECT_EQ(o.randomSeed, 0u);
  EXPECT_EQ(o.compressionStatsLoggingFrequency, 10000);
  EXPECT_FALSE(o.batchTensorsWithSameShape);
  EXPECT_TRUE(o.validate().isOk());
}

TEST(PowerSgdOptionsTest, StartIterMustExceedOneWithErrorFeedbackOrWarmStart) {
  PowerSgdOptions o;
  o.startPowerSgdIter = 1;
  Status st = o.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("startPowerSgdIter must be > 1"), std::string::npos) << st;
  o.useErrorFeedback = false;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);  // warm start still on
  o.warmStart = false;
  EXPECT_TRUE(o.validate().isOk());
  o.startPowerSgdIter = 0;
  EXPECT_TRUE(o.validate().isOk());
}

TEST(PowerSgdOptionsTest, OtherFieldsAreValidatedByName) {
  auto message = [](auto mutate) {
    PowerSgdOptions o;
    mutate(o);
    return o.validate().message();
  };
  EXPECT_NE(message([](auto& o) { o.matrixApproximationRank = 0; }).find("matrixApproximationRank"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.minCompressionRate = 0; }).find("minCompressionRate"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.orthogonalizationEpsilon = -1; }).find("orthogonalizationEpsilon"), std::string::npos);
  EXPECT_NE(message([](auto& o) { o.compressionStatsLoggingFrequency = 0; }).find("compressionStatsLoggingFrequency"),
            std::string::npos);
}

TEST(PowerSgdHookTest, InvalidOptionsFailCreateAndRun) {
  comm::runLocalRanks(1, [](int, comm::Backend& backend) {
    PowerSgdOptions bad;
    bad.startPowerSgdIter = 0;
    EXPECT_EQ(PowerSgdHook::create(backend, bad).status().code(), StatusCode::kInvalidArgument);
    PowerSgdHook hook(backend, bad);
    TestBucket b(0, true, {{"w", {8, 8}}});
    EXPECT_EQ(runStep(hook, {&b}).code(), StatusCode::kInvalidArgument);
  });
}

TEST(PowerSgdHookTest, RateTestFollowsTheClosedForm) {
  // (n + m) * r * rate < n * m
  EXPECT_FALSE(PowerSgdHook::shouldCompress(4, 4, 1, 2.0));   // 16 < 16 fails
  EXPECT_TRUE(PowerSgdHook::shouldCompress(5, 5, 1, 2.0));    // 20 < 25
  EXPECT_FALSE(PowerSgdHook::shouldCompress(100, 1, 1, 2.0)); // a 1-D tensor never passes
  EXPECT_FALSE(PowerSgdHook::shouldCompress(1, 100, 1, 2.0));
  EXPECT_TRUE(PowerSgdHook::shouldCompress(64, 32, 4, 2.0));  // 768 < 2048
  EXPECT_FALSE(PowerSgdHook::shouldCompress(64, 32, 4, 6.0)); // 2304 < 2048 fails
}

// Each rank fills its gradient with rank-specific random values; returns what every rank got.
TEST(PowerSgdHookTest, PlainAverageBeforeStartIterThenCompression) {
  const int world = 3;
  std::mutex mu;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(1, /*start=*/3));
    TestBucket b(0, true, {{"w", {16, 12}}, {"b", {16}}});
    for (int step = 0; step < 4; ++step) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < world; ++r) inputs.push_back(randomVector(b.buffer().size(), 100 * step + r));
      b.buffer() = inputs[rank];
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      EXPECT_EQ(hook.iteration(), static_cast<uint64_t>(step + 1));
      double diffFromAverage = 0;
      for (size_t i = 0; i < b.buffer().size(); ++i) {
        float avg = 0;
        for (int r = 0; r < world; ++r) avg += inputs[r][i] / world;
        diffFromAverage = std::max(diffFromAverage, static_cast<double>(std::abs(b.buffer()[i] - avg)));
      }
      if (step < 3) {
        EXPECT_LT(diffFromAverage, 1e-5) << "step " << step << ": plain allreduce expected";
        EXPECT_EQ(hook.compressionStats().numelBeforeCompression, 0u);
      } else {
        EXPECT_GT(diffFromAverage, 1e-2) << "a full-rank 16x12 gradient cannot survive rank-1 compression";
        EXPECT_EQ(hook.compressionStats().numelBeforeCompression, 16u * 12u + 16u);
      }
    }
  });
}

class PowerSgdWorldTest : public ::testing::TestWithParam<int> {};

TEST_P(PowerSgdWorldTest, ExactlyLowRankGradientIsReproducedAndRanksAgree) {
  const int world = GetParam();
  const size_t n = 24, m = 20, k = 2;
  const auto a = randomVector(n * k, 1);  // shared column space
  const auto bRows = randomVector(m * k, 2);  // shared row space
  std::vector<std::vector<float>> results(world);
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(k));
    TestBucket b(0, true, {{"w", {static_cast<int64_t>(n), static_cast<int64_t>(m)}}});
    for (int step = 0; step < 6; ++step) {
      // Rank r's gradient A C_r B^T (C_r a random k x k core): the average A (mean C) B^T has
      // rank k too, with the same row space every step, so warm start keeps Q on it.
      std::vector<std::vector<float>> grads;
      for (int r = 0; r < world; ++r) {
        const auto bc = lowRank(bRows, randomVector(k * k, 10 * step + r + 7), m, k, k);  // B C^T
        grads.push_back(lowRank(a, bc, n, m, k));
      }
      b.buffer() = grads[rank];
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      std::vector<float> avg(n * m, 0.f);
      for (int r = 0; r < world; ++r)
        for (size_t i = 0; i < avg.size(); ++i) avg[i] += grads[r][i] / world;
      const double scale = testing_util::norm(avg.data(), avg.size()) / std::sqrt(avg.size());
      EXPECT_LT(maxAbsDiff(b.buffer().data(), avg.data(), avg.size()), 1e-4 * scale) << "step " << step << " world " << world;
    }
    EXPECT_GT(hook.compressionStats().numelAfterCompression, 0u);
    results[rank] = b.buffer();
  });
  for (int r = 1; r < world; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r << " disagrees with rank 0";
}

INSTANTIATE_TEST_SUITE_P(Worlds, PowerSgdWorldTest, ::testing::Values(1, 2, 3, 4));

// With error feedback, the outputs' running sum plus the ranks' mean error equals the running
// sum of the true averages (out_t = avg(g_t) + avg(e_{t-1}) - avg(e_t) telescopes). Each rank
// feeds the same full-rank gradient every step, so without feedback the part rank-1 compression
// drops accumulates linearly while with feedback the lag stays bounded.
TEST(PowerSgdHookTest, ErrorFeedbackRunningSumTracksTrueSum) {
  const int world = 2, steps = 40;
  const size_t n = 16, m = 12;
  std::vector<std::vector<float>> finalErrors(world);
  std::vector<float> outputSum(n * m, 0.f), trueSum(n * m, 0.f), noFeedbackSum(n * m, 0.f);
  std::mutex mu;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(1));
    PowerSgdOptions noEf = quickOptions(1);
    noEf.useErrorFeedback = false;
    PowerSgdHook plain(backend, noEf);
    TestBucket b(0, true, {{"w", {16, 12}}});
    TestBucket c(0, true, {{"w", {16, 12}}});
    for (int step = 0; step < steps; ++step) {
      std::vector<std::vector<float>> grads;
      for (int r = 0; r < world; ++r) grads.push_back(randomVector(n * m, 1000 + r));
      b.buffer() = grads[rank];
      c.buffer() = grads[rank];
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      ASSERT_TRUE(runStep(plain, {&c}).isOk());
      if (rank == 0 && step >= 2) {  // steps 0 and 1 are plain allreduce in both
        std::lock_guard<std::mutex> lock(mu);
        for (size_t i = 0; i < n * m; ++i) {
          outputSum[i] += b.buffer()[i];
          noFeedbackSum[i] += c.buffer()[i];
          for (int r = 0; r < world; ++r) trueSum[i] += grads[r][i] / world;
        }
      }
    }
    finalErrors[rank] = hook.stateSnapshot().tensors.at("w").error;
  });
  std::vector<float> tracked(n * m);
  for (size_t i = 0; i < n * m; ++i) tracked[i] = outputSum[i] + (finalErrors[0][i] + finalErrors[1][i]) / world;
  const double scale = testing_util::norm(trueSum.data(), trueSum.size());
  double diff = 0, diffNoEf = 0;
  for (size_t i = 0; i < n * m; ++i) {
    diff += std::pow(tracked[i] - trueSum[i], 2);
    diffNoEf += std::pow(noFeedbackSum[i] - trueSum[i], 2);
  }
  EXPECT_LT(std::sqrt(diff), 1e-4 * scale);
  // Without feedback the lost part accumulates: the running sum drifts far from the truth.
  EXPECT_GT(std::sqrt(diffNoEf), 0.3 * scale);
  // With feedback the outputs alone lag the truth by only the last step's error.
  double lag = 0;
  for (size_t i = 0; i < n * m; ++i) lag += std::pow(outputSum[i] - trueSum[i], 2);
  EXPECT_LT(std::sqrt(lag), std::sqrt(diffNoEf) / 2);
}

// Note [Deferred error feedback] (kernels/powersgd_ops.h): the hook keeps the error as (S, P, Q)
// between steps; the error it reports must be, bit for bit, the eager definition
// e_t = (g_t + e_{t-1}) - out_t. World size 1, so out_t is exactly the approximation P Q^T.
TEST(PowerSgdHookTest, ReportedErrorIsTheEagerErrorBitwise) {
  comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(2));
    TestBucket b(0, true, {{"w", {24, 40}}, {"v", {9, 33}}});
    std::map<std::string, std::vector<float>> previous;
    for (int step = 0; step < 6; ++step) {
      const std::vector<float> grad = randomVector(b.buffer().size(), 70 + step);
      b.buffer() = grad;
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      if (step < 2) continue;  // plain allreduce before the start iteration
      const PowerSgdState state = hook.stateSnapshot();
      size_t offset = 0;
      for (const auto& [key, numel] : {std::pair<std::string, size_t>{"w", 24 * 40}, {"v", 9 * 33}}) {
        const std::vector<float>& error = state.tensors.at(key).error;
        ASSERT_EQ(error.size(), numel) << key;
        EXPECT_FALSE(state.tensors.at(key).errorDeferred) << key << ": snapshots hold the error itself";
        const std::vector<float> last = previous.count(key) ? previous[key] : std::vector<float>(numel, 0.f);
        for (size_t i = 0; i < numel; ++i) {
          const float want = (grad[offset + i] + last[i]) - b.buffer()[offset + i];
          ASSERT_EQ(error[i], want) << key << " step " << step << " element " << i;
        }
        previous[key] = error;
        offset += numel;
      }
    }
  });
}

// A step that fails after the first pass (here: its P allreduce reports an error, a fault
// injected by RecordingBackend) leaves the tensors' error buffers holding that step's
// compensated gradient. The next step must not feed it back: the error feedback is dropped and
// the step after the failure reports e = g - out, as on a first compressed step.
TEST(PowerSgdHookTest, AStepThatFailsMidwayDropsTheErrorFeedback) {
  comm::runLocalRanks(1, [&](int, comm::Backend& inner) {
    comm::RecordingBackend backend(inner);
    // Ops: steps 0 and 1 one plain allreduce each; step 2 P and Q; step 3's P is the fifth.
    comm::FaultRule fail;
    fail.type = comm::OpType::kAllreduce;
    fail.nth = 5;
    fail.status = unavailable("injected: P allreduce fails");
    backend.addFault(fail);
    PowerSgdHook hook(backend, quickOptions(2));
    TestBucket b(0, true, {{"w", {24, 40}}});
    for (int step = 0; step < 3; ++step) {
      b.buffer() = randomVector(b.buffer().size(), 90 + step);
      ASSERT_TRUE(runStep(hook, {&b}).isOk()) << "step " << step;
    }
    b.buffer() = randomVector(b.buffer().size(), 93);
    EXPECT_EQ(runStep(hook, {&b}).code(), StatusCode::kUnavailable);
    EXPECT_TRUE(hook.stateSnapshot().tensors.at("w").error.empty()) << "a failed step leaves no error to save";

    const std::vector<float> grad = randomVector(b.buffer().size(), 94);
    b.buffer() = grad;
    ASSERT_TRUE(runStep(hook, {&b}).isOk());
    const std::vector<float> error = hook.stateSnapshot().tensors.at("w").error;
    ASSERT_EQ(error.size(), grad.size());
    for (size_t i = 0; i < grad.size(); ++i) ASSERT_EQ(error[i], grad[i] - b.buffer()[i]) << "element " << i;
  });
}

TEST(PowerSgdHookTest, UncompressedTensorsAreReducedExactlyAndStatsAreClosedForm) {
  const int world = 3;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(2));
    TestBucket b(0, true, {{"bias1", {64}}, {"w", {64, 32}}, {"tiny", {3, 3}}, {"bias2", {5}}});
    for (int step = 0; step < 3; ++step) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < world; ++r) inputs.push_back(randomVector(b.buffer().size(), 50 * step + r));
      b.buffer() = inputs[rank];
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      // bias1, tiny (3x3 fails the rate test) and bias2 are exact averages: sum in rank order,
      // times 1/world, as the hook computes them.
      for (size_t t : {size_t{0}, size_t{2}, size_t{3}}) {
        const size_t off = b.offset(t), numel = b.params()[t].numel();
        for (size_t i = off; i < off + numel; ++i) {
          float sum = inputs[0][i];
          for (int r = 1; r < world; ++r) sum += inputs[r][i];
          const float want = step < 2 ? b.buffer()[i] : sum * (1.0f / world);
          ASSERT_EQ(b.buffer()[i], want) << "tensor " << t << " element " << i;
        }
      }
    }
    const CompressionStats s = hook.compressionStats();  // one PowerSGD step so far
    EXPECT_EQ(s.numelBeforeCompression, 64u + 64u * 32u + 9u + 5u);
    EXPECT_EQ(s.numelAfterCompression, 64u + (64u + 32u) * 2u + 9u + 5u);
    EXPECT_EQ(s.bytesBeforeCompression, 4 * s.numelBeforeCompression);
    EXPECT_DOUBLE_EQ(s.compressionRatio(), 2126.0 / 270.0);
    const PowerSgdState state = hook.stateSnapshot();
    EXPECT_EQ(state.tensors.count("bias1"), 0u) << "uncompressed tensors carry no error";
    EXPECT_EQ(state.tensors.at("w").q.size(), 32u * 2u);
  });
}

// Three buckets whose run() calls overlap (each leaves its Q allreduce in flight) give the same
// results as running them one at a time, and every rank agrees.
TEST(PowerSgdHookTest, SeveralBucketsInFlightMatchSequentialAndRanksAgree) {
  const int world = 3;
  std::vector<std::vector<float>> overlapped(world), sequential(world);
  for (bool overlap : {true, false}) {
    comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
      PowerSgdHook hook(backend, quickOptions(2));
      TestBucket b0(0, false, {{"l3.w", {20, 30}}, {"l3.b", {20}}});
      TestBucket b1(1, false, {{"l2.w", {30, 30}}, {"l2.b", {30}}});
      TestBucket b2(2, true, {{"l1.w", {30, 10}}});
      for (int step = 0; step < 5; ++step) {
        uint32_t seed = 7000 + 100 * step + rank;
        for (auto* b : {&b0, &b1, &b2}) b->buffer() = randomVector(b->buffer().size(), seed += 10);
        Status st = overlap ? runStep(hook, {&b0, &b1, &b2}) : runStepSequential(hook, {&b0, &b1, &b2});
        ASSERT_TRUE(st.isOk()) << st;
      }
      EXPECT_EQ(hook.iteration(), 5u);
      std::vector<float> all;
      for (auto* b : {&b0, &b1, &b2}) all.insert(all.end(), b->buffer().begin(), b->buffer().end());
      (overlap ? overlapped : sequential)[rank] = all;
    });
  }
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(overlapped[r], sequential[r]) << "rank " << r;
    EXPECT_EQ(overlapped[r], overlapped[0]) << "rank " << r << " disagrees";
  }
}

TEST(PowerSgdHookTest, BatchingSameShapeTensorsGivesIdenticalResults) {
  std::vector<std::vector<float>> out(2);
  for (bool batch : {false, true}) {
    comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
      PowerSgdOptions o = quickOptions(3);
      o.batchTensorsWithSameShape = batch;
      PowerSgdHook hook(backend, o);
      TestBucket b(0, true, {{"a", {16, 16}}, {"b", {16, 16}}, {"c", {16}}, {"d", {16, 16}}, {"e", {8, 16}}});
      for (int step = 0; step < 4; ++step) {
        b.buffer() = randomVector(b.buffer().size(), 300 + 10 * step + rank);
        ASSERT_TRUE(runStep(hook, {&b}).isOk());
      }
      if (rank == 0) out[batch ? 1 : 0] = b.buffer();
    });
  }
  EXPECT_EQ(out[0], out[1]);
}

TEST(PowerSgdHookTest, WithoutWarmStartQIsFreshEachStepButRanksAgree) {
  std::vector<std::vector<float>> out(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
    PowerSgdOptions o = quickOptions(1, 0);
    o.warmStart = false;
    o.useErrorFeedback = false;
    PowerSgdHook hook(backend, o);
    TestBucket b(0, true, {{"w", {10, 10}}});
    b.buffer() = randomVector(100, 5 + rank);
    ASSERT_TRUE(runStep(hook, {&b}).isOk());
    EXPECT_TRUE(hook.stateSnapshot().tensors.at("w").q.empty());
    out[rank] = b.buffer();
  });
  EXPECT_EQ(out[0], out[1]);
}

// An all-zero gradient (an unused layer) gives zero P and Q: PyTorch's epsilon-0 default turns
// that into NaN. Here the output is zero, and the next step, with warm start, refills the zero Q
// and reproduces a low-rank gradient exactly again.
TEST(PowerSgdHookTest, ZeroGradientGivesZerosAndDoesNotLoseRank) {
  comm::runLocalRanks(2, [](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(2));
    TestBucket b(0, true, {{"w", {12, 10}}});
    const auto g = lowRank(randomVector(24, 1), randomVector(20, 2), 12, 10, 2);  // same on both ranks
    for (int step = 0; step < 6; ++step) {
      const bool zeroStep = step == 2 || step == 3;
      b.buffer() = zeroStep ? std::vector<float>(120, 0.f) : g;
      ASSERT_TRUE(runStep(hook, {&b}).isOk());
      const auto& want = zeroStep ? std::vector<float>(120, 0.f) : g;
      EXPECT_LT(maxAbsDiff(b.buffer().data(), want.data(), 120), 1e-4) << "step " << step;
    }
    (void)rank;
  });
}

// An f16 / bf16 bucket (e.g. under the fp16 wrapper) is compressed in f32: from the start
// iteration on, its result is the f32 hook's result on the same (rounded) inputs, rounded.
TEST(PowerSgdHookTest, HalfBucketsAreCompressedInF32) {
  for (DType half : {DType::kF16, DType::kBF16}) {
    comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
      auto toHalf = [&](float f) { return half == DType::kF16 ? floatToHalf(f) : floatToBf16(f); };
      auto toFloat = [&](uint16_t h) { return half == DType::kF16 ? halfToFloat(h) : bf16ToFloat(h); };
      PowerSgdHook f32Hook(backend, quickOptions(2));
      PowerSgdHook halfHook(backend, quickOptions(2));
      TestBucket ref(0, true, {{"w", {12, 10}}, {"b", {12}}});
      std::vector<uint16_t> storage(ref.buffer().size());
      Parameter w = ref.params()[0], b = ref.params()[1];
      for (int step = 0; step < 5; ++step) {
        const auto x = randomVector(storage.size(), 60 * step + rank);
        for (size_t i = 0; i < x.size(); ++i) {
          storage[i] = toHalf(x[i]);
          ref.buffer()[i] = toFloat(storage[i]);
        }
        comm::BufferView all = comm::viewOf(storage.data(), storage.size(), half);
        GradBucket hb(0, true, all, {all.slice(0, 120), all.slice(120, 12)}, {&w, &b}, 42);
        auto r = halfHook.run(hb);
        ASSERT_TRUE(r.isOk()) << r.status();
        ASSERT_TRUE(r->work->wait().isOk());
        ASSERT_TRUE(r->finish().isOk());
        ASSERT_TRUE(runStep(f32Hook, {&ref}).isOk());
        if (step < 2) continue;  // plain allreduce rounds differently in half; no state involved
        for (size_t i = 0; i < storage.size(); ++i) {
          ASSERT_EQ(storage[i], toHalf(ref.buffer()[i])) << dtypeName(half) << " step " << step << " i " << i;
        }
      }
    });
  }
}

// Sizes 0 and 1 next to an ordinary tensor: empty tensors and an empty bucket pass through (the
// empty bucket issues no collective, on every rank alike), a 1 x 1 tensor is averaged exactly.
TEST(PowerSgdHookTest, EmptyAndTinyTensorsPassThrough) {
  const int world = 3;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(1));
    TestBucket empty(0, false, {});
    TestBucket b(1, true, {{"zero", {0, 5}}, {"one", {1, 1}}, {"w", {9, 7}}, {"none", {0}}});
    for (int step = 0; step < 4; ++step) {
      std::vector<std::vector<float>> inputs;
      for (int r = 0; r < world; ++r) inputs.push_back(randomVector(b.buffer().size(), 70 * step + r));
      b.buffer() = inputs[rank];
      ASSERT_TRUE(runStep(hook, {&empty, &b}).isOk());
      const size_t one = b.offset(1);
      const float want = (inputs[0][one] + inputs[1][one] + inputs[2][one]) * (1.0f / world);
      EXPECT_NEAR(b.buffer()[one], want, 1e-6) << "step " << step;
    }
    EXPECT_EQ(hook.iteration(), 4u);
    EXPECT_EQ(hook.stateSnapshot().tensors.count("w"), 1u);
  });
}

// Statistics are logged on the last bucket of the first PowerSGD step and then every
// compressionStatsLoggingFrequency iterations (PyTorch's next_stats_report schedule).
TEST(PowerSgdHookTest, StatisticsAreReportedOnSchedule) {
  comm::runLocalRanks(1, [](int, comm::Backend& backend) {
    PowerSgdOptions o = quickOptions(1);
    o.compressionStatsLoggingFrequency = 3;
    PowerSgdHook hook(backend, o);
    TestBucket first(0, false, {{"a", {8, 8}}});
    TestBucket last(1, true, {{"b", {8, 8}}});
    std::vector<uint64_t> nextReport;
    for (int step = 0; step < 9; ++step) {
      first.buffer() = randomVector(64, step);
      last.buffer() = randomVector(64, 100 + step);
      ASSERT_TRUE(runStep(hook, {&first, &last}).isOk());
      nextReport.push_back(hook.stateSnapshot().nextStatsReport);
    }
    // Reports at iterations 2, 5, 8 (the run() of each step sees the iteration before finish).
    EXPECT_EQ(nextReport, (std::vector<uint64_t>{0, 0, 5, 5, 5, 8, 8, 8, 11}));
    EXPECT_EQ(hook.compressionStats().numelBeforeCompression, 7u * 128u);
  });
}

// The built-in fp16 wrapper (worker/ddp/default_hooks.h) around PowerSGD: the hook sees an f16
// bucket, compresses it in f32, and the result is the f32 hook's up to f16 rounding.
TEST(PowerSgdHookTest, WorksInsideTheFp16Wrapper) {
  comm::runLocalRanks(2, [](int rank, comm::Backend& backend) {
    auto wrapped = makeFp16Wrapper(std::make_unique<PowerSgdHook>(backend, quickOptions(2)));
    PowerSgdHook plain(backend, quickOptions(2));
    EXPECT_TRUE(wrapped->hasState());
    TestBucket a(0, true, {{"w", {16, 12}}, {"b", {16}}});
    TestBucket b(0, true, {{"w", {16, 12}}, {"b", {16}}});
    for (int step = 0; step < 5; ++step) {
      auto x = randomVector(a.buffer().size(), 90 * step + rank);
      for (auto& v : x) v = halfToFloat(floatToHalf(v));  // representable in f16
      a.buffer() = x;
      b.buffer() = x;
      ASSERT_TRUE(runStep(*wrapped, {&a}).isOk());
      ASSERT_TRUE(runStep(plain, {&b}).isOk());
      const double scale = testing_util::norm(b.buffer().data(), b.buffer().size()) / std::sqrt(b.buffer().size());
      EXPECT_LT(maxAbsDiff(a.buffer().data(), b.buffer().data(), a.buffer().size()), 5e-3 * scale + 1e-3)
          << "step " << step;
    }
    auto saved = wrapped->saveState();
    ASSERT_TRUE(saved.isOk());
    EXPECT_TRUE(PowerSgdState::deserialize(*saved).isOk());
  });
}

TEST(PowerSgdHookTest, BadBucketsAreRejected) {
  comm::runLocalRanks(1, [](int, comm::Backend& backend) {
    PowerSgdHook hook(backend, quickOptions(1));
    TestBucket dup(0, true, {{"w", {8, 8}}, {"w", {8, 8}}});
    ASSERT_TRUE(runStep(hook, {&dup}).isOk());  // before the start iteration: plain allreduce
    ASSERT_TRUE(runStep(hook, {&dup}).isOk());
    EXPECT_EQ(runStep(hook, {&dup}).code(), StatusCode::kInvalidArgument);

    std::vector<double> doubles(4);
    GradBucket f64(0, true, comm::viewOf(doubles.data(), doubles.size()), {}, {}, 1);
    EXPECT_EQ(hook.run(f64).status().code(), StatusCode::kUnimplemented);
  });
}

}  // namespace
}  // namespace ddp
