// DistributedFusedAdam over LocalBackend (ranks as threads) against a plain Adam/AdamW fed the
// world-averaged gradient (summed in rank order, as the reduce-scatter does). RecordingBackend
// proves the overlap timing; nothing is faked.
#include "worker/optim/distributed_fused_adam.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"
#include "worker/optim/optimizer.h"

namespace ddp::optim {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

struct Model : test::FloatParams {
  explicit Model(const std::vector<size_t>& sizes)
      : FloatParams(sizes, [](size_t i, size_t k) { return std::sin(0.37f * (i + 1) + 0.11f * k); }) {}
};

// Rank r's local gradient at `step` (depends on the current parameters).
float localGrad(const Model& m, size_t i, size_t k, int step, int rank) {
  return std::cos(3.f * m.data[i][k] + 0.5f * step + rank) * (1.f + 0.25f * rank);
}
void setLocalGrads(Model& m, int step, int rank) {
  for (size_t i = 0; i < m.data.size(); ++i)
    for (size_t k = 0; k < m.data[i].size(); ++k) m.grad[i][k] = localGrad(m, i, k, step, rank);
}
// Sum over ranks in rank order (what the reduce-scatter computes).
void setSummedGrads(Model& m, int step, int world) {
  for (size_t i = 0; i < m.data.size(); ++i)
    for (size_t k = 0; k < m.data[i].size(); ++k) {
      float s = 0.f;
      for (int r = 0; r < world; ++r) s += localGrad(m, i, k, step, r);
      m.grad[i][k] = s;
    }
}
// "Backward": grads set, then marked ready last parameter first.
void backward(Model& m, DistributedFusedAdam& dfa, int step, int rank) {
  setLocalGrads(m, step, rank);
  for (size_t i = m.params.size(); i-- > 0;) dfa.markGradReady(i);
}

const std::vector<size_t> kSizes{130, 7, 64, 257, 1, 33, 90};

void expectClose(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                 float tol = 1e-6f) {
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < a[i].size(); ++k) ASSERT_NEAR(a[i][k], b[i][k], tol) << i << "," << k;
}

TEST(DistributedFusedAdamTest, EqualsPlainAdamOnAveragedGradientsWorld1To4) {
  for (auto cfg : {OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.01f), OptimizerConfig::adamw(0.02f)}) {
    for (int world = 1; world <= 4; ++world) {
      Model ref(kSizes);
      auto plain = makeOptimizer(cfg, ref.ptrs());
      for (int s = 0; s < 4; ++s) {
        setSummedGrads(ref, s, world);
        ASSERT_TRUE((*plain)->step(1.f / world).isOk());
      }
      std::mutex mu;
      size_t maxState = 0;
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m(kSizes);
        DistributedFusedAdamOptions o;
        o.config = cfg;
        o.bucketCapBytes = 200 * sizeof(float);  // several buckets
        auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
        ASSERT_TRUE(dfa.isOk()) << dfa.status();
        EXPECT_GE((*dfa)->layout().buckets.size(), 3u);
        for (int s = 0; s < 4; ++s) {
          backward(m, **dfa, s, rank);
          ASSERT_TRUE((*dfa)->step(soon()).isOk());
        }
        expectClose(m.data, ref.data);
        std::lock_guard<std::mutex> lock(mu);
        maxState = std::max(maxState, (*dfa)->stateBytes());
      });
      // State per rank = total / world plus at most one alignment block per bucket and shard.
      const size_t buckets = planDfaLayout(kSizes, world, 200).buckets.size();
      EXPECT_LE(maxState, (*plain)->stateBytes() / world + buckets * 2 * kDfaShardAlignElems * sizeof(float));
    }
  }
}

TEST(DistributedFusedAdamTest, EarlyBucketIsReduceScatteredBeforeBackwardEndsWithTwoInFlight) {
  comm::runLocalRanks(2, [&](int rank, comm::Backend& inner) {
    comm::RecordingBackend pg(inner);
    Model m({64, 64, 64, 64, 64});
    DistributedFusedAdamOptions o;
    o.bucketCapBytes = 64 * sizeof(float);  // one parameter per bucket
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    ASSERT_TRUE(dfa.isOk());
    setLocalGrads(m, 0, rank);
    auto ready = (*dfa)->gradReadyFn();
    ready(4);  // the last layer's gradient: bucket 0 is complete
    ASSERT_EQ(pg.ops().size(), 1u);  // launched while "backward" still has 4 parameters to go
    EXPECT_EQ(pg.ops()[0].type, comm::OpType::kReduceScatter);
    for (size_t i = 4; i-- > 0;) ready(i);
    ASSERT_TRUE((*dfa)->step(soon()).isOk());
    auto ops = pg.ops();
    std::vector<comm::RecordedOp> rs;
    for (const auto& op : ops)
      if (op.type == comm::OpType::kReduceScatter) rs.push_back(op);
    ASSERT_EQ(rs.size(), 5u);
    for (size_t k = 0; k + 2 < rs.size(); ++k) {
      ASSERT_TRUE(rs[k].completed.has_value());
      EXPECT_LE(*rs[k].completed, rs[k + 2].issued) << "more than 2 buckets in flight at bucket " << k + 2;
    }
  });
}

TEST(DistributedFusedAdamTest, GradNormEqualsNonShardedNormAndClipMatchesClippedAdam) {
  const int world = 3;
  const float maxNorm = 0.5f;
  Model ref(kSizes);
  auto plain = makeOptimizer(OptimizerConfig::adam(0.01f), ref.ptrs());
  std::vector<double> refNorms;
  for (int s = 0; s < 3; ++s) {
    setSummedGrads(ref, s, world);
    double sq = 0;
    for (auto& g : ref.grad)
      for (float& x : g) {
        x /= world;  // averaged, as DDP would
        sq += static_cast<double>(x) * x;
      }
    const double norm = std::sqrt(sq);
    refNorms.push_back(norm);
    const double coef = maxNorm / (norm + 1e-6);
    if (coef < 1)
      for (auto& g : ref.grad)
        for (float& x : g) x = static_cast<float>(x * coef);
    ASSERT_TRUE((*plain)->step().isOk());
  }
  comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
    Model m(kSizes);
    DistributedFusedAdamOptions o;
    o.config = OptimizerConfig::adam(0.01f);
    o.bucketCapBytes = 300 * sizeof(float);
    o.maxGradNorm = maxNorm;
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    for (int s = 0; s < 3; ++s) {
      backward(m, **dfa, s, rank);
      auto norm = (*dfa)->gradNorm(soon());
      ASSERT_TRUE(norm.isOk());
      EXPECT_NEAR(*norm, refNorms[s], 1e-6 * refNorms[s]);
      ASSERT_TRUE((*dfa)->step(soon()).isOk());
      EXPECT_NEAR((*dfa)->lastGradNorm(), refNorms[s], 1e-6 * refNorms[s]);
    }
    expectClose(m.data, ref.data, 2e-6f);
  });
  EXPECT_GT(refNorms[0], maxNorm);  // clipping really happened
}

TEST(DistributedFusedAdamTest, AccumulatesAcrossBackwardsIntoTheShard) {
  const int world = 2;
  Model ref(kSizes);
  auto plain = makeOptimizer(OptimizerConfig::adam(0.01f), ref.ptrs());
  // Micro-steps 0 and 1 accumulate (gradients computed at the same parameters).
  Model tmp(kSizes);
  setSummedGrads(tmp, 0, world);
  setSummedGrads(ref, 1, world);
  for (size_t i = 0; i < kSizes.size(); ++i)
    for (size_t k = 0; k < kSizes[i]; ++k) ref.grad[i][k] = tmp.grad[i][k] + ref.grad[i][k];
  ASSERT_TRUE((*plain)->step(1.f / world).isOk());
  comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
    Model m(kSizes);
    DistributedFusedAdamOptions o;
    o.config = OptimizerConfig::adam(0.01f);
    o.bucketCapBytes = 256 * sizeof(float);
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    backward(m, **dfa, 0, rank);
    ASSERT_TRUE((*dfa)->finishBackward(soon()).isOk());
    backward(m, **dfa, 1, rank);
    ASSERT_TRUE((*dfa)->step(soon()).isOk());
    expectClose(m.data, ref.data);
  });
}

// The state streams to rank 0 in chunks (the root's only temporary is one chunk) and loads at a
// different world size and bucket cap, continuing the plain optimizer's trajectory.
TEST(DistributedFusedAdamTest, ChunkedGatherBoundedAndReshardsTwoToThree) {
  const std::vector<size_t> sizes{3000, 1, 2500, 777};
  const size_t chunkBytes = 1024;
  Model ref(sizes);
  auto plain = makeOptimizer(OptimizerConfig::adamw(0.01f), ref.ptrs());
  for (int s = 0; s < 5; ++s) {
    setSummedGrads(ref, s, s < 3 ? 2 : 3);
    ASSERT_TRUE((*plain)->step(1.f / (s < 3 ? 2 : 3)).isOk());
  }
  std::string state;
  std::vector<std::vector<float>> params;
  size_t peak = 0, largestPiece = 0;
  comm::runLocalRanks(2, [&](int rank, comm::Backend& pg) {
    Model m(sizes);
    DistributedFusedAdamOptions o;
    o.config = OptimizerConfig::adamw(0.01f);
    o.bucketCapBytes = 4000 * sizeof(float);
    o.stateChunkBytes = chunkBytes;
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    for (int s = 0; s < 3; ++s) {
      backward(m, **dfa, s, rank);
      ASSERT_TRUE((*dfa)->step(soon()).isOk());
    }
    std::string out;
    size_t biggest = 0;
    Status st = (*dfa)->gatherStateDict(0, [&](std::string_view piece) {
      out.append(piece);
      biggest = std::max(biggest, piece.size());
      return Status::ok();
    }, soon());
    ASSERT_TRUE(st.isOk()) << st;
    if (rank == 0) {
      state = out;
      params = m.data;
      peak = (*dfa)->lastGatherPeakTempBytes();
      largestPiece = biggest;
    } else {
      EXPECT_TRUE(out.empty());
    }
  });
  const size_t stateValues = 2 * (3000 + 1 + 2500 + 777) * sizeof(float);
  EXPECT_GT(state.size(), stateValues);
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, chunkBytes);  // bounded by the chunk, not by the ~50 KB of state
  EXPECT_LE(largestPiece, std::max<size_t>(chunkBytes, 128));  // header pieces are small here

  comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) {
    Model m(sizes);
    for (size_t i = 0; i < sizes.size(); ++i) m.data[i] = params[i];
    DistributedFusedAdamOptions o;
    o.config = OptimizerConfig::adamw(0.5f);  // replaced by the saved hyperparameters
    o.bucketCapBytes = 2600 * sizeof(float);  // a different layout too
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    ASSERT_TRUE((*dfa)->loadStateDict(state).isOk());
    EXPECT_EQ((*dfa)->stepCount(), 3);
    EXPECT_FLOAT_EQ((*dfa)->lr(), 0.01f);
    for (int s = 3; s < 5; ++s) {
      backward(m, **dfa, s, rank);
      ASSERT_TRUE((*dfa)->step(soon()).isOk());
    }
    ASSERT_NO_FATAL_FAILURE(expectClose(m.data, ref.data, 2e-6f));
    std::string bad = state;
    bad[bad.size() / 2] ^= 1;
    EXPECT_EQ((*dfa)->loadStateDict(bad).code(), StatusCode::kDataLoss);
    EXPECT_EQ((*dfa)->loadStateDict(state.substr(0, state.size() - 3)).code(), StatusCode::kDataLoss);
  });
}

TEST(DistributedFusedAdamTest, RejectsBadOptionsAndDoubleReady) {
  auto g = comm::makeLocalGroup(1);
  comm::LocalBackend pg(g, 0);
  Model m({4});
  DistributedFusedAdamOptions o;
  o.config = OptimizerConfig::sgd(0.1f);
  EXPECT_EQ(DistributedFusedAdam::create(m.ptrs(), pg, o).status().code(), StatusCode::kInvalidArgument);
  o.config = OptimizerConfig::adam();
  o.maxBucketsInFlight = 0;
  EXPECT_EQ(DistributedFusedAdam::create(m.ptrs(), pg, o).status().code(), StatusCode::kInvalidArgument);
  auto dfa = DistributedFusedAdam::create(m.ptrs(), pg);
  ASSERT_TRUE(dfa.isOk());
  (*dfa)->markGradReady(0);
  (*dfa)->markGradReady(0);
  EXPECT_EQ((*dfa)->step(soon()).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*dfa)->step(soon()).isOk());  // the error is reported once; the next step works
}

}  // namespace
}  // namespace ddp::optim
