// Note [Sample chunks] (worker/model/sample_chunks.h): a CPU training step runs its batch in
// chunks of samples. Oracles: the rule's closed forms; the step's gradient against the mean of
// one-sample steps (a batch of one never splits); the ready callback once per parameter, after
// the last chunk's contribution; a bad label anywhere fails the step before any gradient moves;
// dropout and weight-heavy models run whole.
#include "worker/model/sample_chunks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "common/split_mix_rng.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"
#include "worker/model/sequential_builder.h"

namespace ddp::model {
namespace {

constexpr int64_t kKiB = 1024;

TEST(SampleChunksTest, RuleSplitsIntoTheFewestEqualChunksThatFit) {
  EXPECT_EQ(samplesPerChunk(128 * kKiB, 0, 64), 8);   // 1 MiB / 128 KiB = 8 per chunk
  EXPECT_EQ(samplesPerChunk(128 * kKiB, 0, 10), 5);   // 2 chunks of 5, not 8 + 2
  EXPECT_EQ(samplesPerChunk(128 * kKiB, 0, 8), 8);    // fits whole
  EXPECT_EQ(samplesPerChunk(2048 * kKiB, 0, 64), 1);  // a sample over the budget: one each
  EXPECT_EQ(samplesPerChunk(0, 0, 64), 64);           // not chunkable
  EXPECT_EQ(samplesPerChunk(128 * kKiB, 0, 1), 1);
  EXPECT_EQ(samplesPerChunk(128 * kKiB, 4096 * kKiB, 64), 32);  // parameters set the floor
}

CnnConfig benchCnn() { return {.input = {1, 28, 28}, .convChannels = {8, 16}, .hidden = {128}, .classes = 10}; }

TEST(SampleChunksTest, TheBenchCnnRunsInChunksOfEightAndMlpsWhole) {
  auto cnn = buildCnn(benchCnn(), {.seed = 1}).value();
  // conv0 8x28x28, pool and relu 8x14x14 each, conv1 16x14x14, pool and relu 16x7x7 each,
  // flatten 784, fc0 and its relu 128 each, fc1 10.
  EXPECT_EQ(cnn->chunkFloatsPerSample(), 6272 + 2 * 1568 + 3136 + 3 * 784 + 2 * 128 + 10);
  EXPECT_EQ(cnn->samplesPerStepChunk(64), 8);  // 121,296 bytes a sample with gradients
  auto mlp = buildMlp({.inputs = 784, .hidden = {256, 256}, .classes = 10}, {.seed = 1}).value();
  EXPECT_EQ(mlp->samplesPerStepChunk(64), 64);
  auto wide = buildMlp({.inputs = 784, .hidden = {2048, 2048}, .classes = 10}, {.seed = 1}).value();
  EXPECT_EQ(wide->samplesPerStepChunk(512), 512);  // 65 KB a sample, but 47 MB of weights and gradients
}

TEST(SampleChunksTest, DropoutMakesTheBatchRunWhole) {
  for (double p : {0.0, 0.5}) {
    std::vector<LayerSpec> layers = {{.kind = LayerKind::kConv2d, .out = 16, .kernel = 3, .padding = 1},
                                     {.kind = LayerKind::kDropout, .p = p},
                                     {.kind = LayerKind::kFlatten},
                                     {.kind = LayerKind::kLinear, .out = 10}};
    auto m = buildSequential(layers, {1, 28, 28}, {.seed = 1}).value();
    EXPECT_EQ(m->samplesPerStepChunk(64) < 64, p == 0.0) << "p " << p;
  }
}

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Data randomData(int batch, uint64_t seed) {
  SplitMixRng rng(seed);
  Data d;
  d.x.resize(static_cast<size_t>(batch) * 784);
  for (float& v : d.x) v = rng.normal();
  for (int i = 0; i < batch; ++i) d.y.push_back(static_cast<int32_t>(rng.below(10)));
  return d;
}

std::vector<std::vector<float>> gradsOf(Module& m) {
  std::vector<std::vector<float>> g;
  for (Parameter* p : m.parameters()) {
    const float* v = static_cast<const float*>(p->grad);
    g.emplace_back(v, v + p->numel());
  }
  return g;
}

TEST(SampleChunksTest, ChunkedStepEqualsTheMeanOfOneSampleStepsAndReportsEachParameterOnceComplete) {
  const int batch = 20;  // 3 chunks: 7 + 7 + 6
  auto m = buildCnn(benchCnn(), {.seed = 3}).value();
  ASSERT_EQ(m->samplesPerStepChunk(batch), 7);
  const Data d = randomData(batch, 9);
  const auto params = m->parameters();

  m->zeroGrad();
  std::vector<size_t> order;
  std::vector<std::vector<float>> atReady(params.size());
  auto stats = m->forwardBackward(
      d.x.data(), d.y.data(), batch,
      [&](size_t i) {
        order.push_back(i);
        const float* g = static_cast<const float*>(params[i]->grad);
        atReady[i].assign(g, g + params[i]->numel());
      },
      0.5f);
  ASSERT_TRUE(stats.isOk()) << stats.status();
  EXPECT_EQ(stats.value().count, batch);
  const auto chunked = gradsOf(*m);
  ASSERT_EQ(order.size(), params.size());  // once each, in the last chunk only
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(atReady[i], chunked[i]) << params[i]->name;

  m->zeroGrad();
  double lossSum = 0;
  for (int s = 0; s < batch; ++s) {
    auto one = m->forwardBackward(d.x.data() + s * 784, d.y.data() + s, 1, {}, 0.5f / batch);
    ASSERT_TRUE(one.isOk());
    lossSum += one.value().lossSum;
  }
  const auto oracle = gradsOf(*m);
  EXPECT_NEAR(stats.value().lossSum, lossSum, 1e-4 * std::fabs(lossSum));
  for (size_t k = 0; k < params.size(); ++k) {
    double scale = 1e-6;
    for (float v : oracle[k]) scale = std::max(scale, double(std::fabs(v)));
    for (size_t i = 0; i < oracle[k].size(); ++i) {
      ASSERT_NEAR(chunked[k][i], oracle[k][i], 1e-5 * scale) << params[k]->name << "[" << i << "]";
    }
  }
}

TEST(SampleChunksTest, ABadLabelInTheLastChunkFailsBeforeAnyGradientMoves) {
  const int batch = 20;
  auto m = buildCnn(benchCnn(), {.seed = 3}).value();
  Data d = randomData(batch, 10);
  d.y[19] = 10;
  m->zeroGrad();
  int readies = 0;
  auto r = m->forwardBackward(d.x.data(), d.y.data(), batch, [&](size_t) { ++readies; });
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("batch row 19"), std::string::npos) << r.status();
  EXPECT_EQ(readies, 0);
  for (const auto& g : gradsOf(*m)) {
    EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](float v) { return v == 0.f; }));
  }
}

// The regression path (one output, mean squared error) splits the same way.
TEST(SampleChunksTest, ChunkedRegressionEqualsTheMeanOfOneSampleSteps) {
  const int batch = 20;
  CnnConfig cfg = benchCnn();
  cfg.classes = 1;
  auto m = buildCnn(cfg, {.seed = 4}).value();
  ASSERT_LT(m->samplesPerStepChunk(batch), batch);
  const Data d = randomData(batch, 11);
  std::vector<float> values(batch);
  for (int i = 0; i < batch; ++i) values[i] = 0.1f * static_cast<float>(d.y[i]);
  const auto step = [&](int from, int n, float scale) {
    Batch b;
    b.size = n;
    b.features = d.x.data() + from * 784;
    b.values = values.data() + from;
    auto r = m->forwardBackward(b, {}, scale);
    ASSERT_TRUE(r.isOk()) << r.status();
  };
  m->zeroGrad();
  step(0, batch, 1.f);
  const auto chunked = gradsOf(*m);
  m->zeroGrad();
  for (int s = 0; s < batch; ++s) step(s, 1, 1.f / batch);
  const auto oracle = gradsOf(*m);
  for (size_t k = 0; k < oracle.size(); ++k) {
    double scale = 1e-6;
    for (float v : oracle[k]) scale = std::max(scale, double(std::fabs(v)));
    for (size_t i = 0; i < oracle[k].size(); ++i) ASSERT_NEAR(chunked[k][i], oracle[k][i], 1e-5 * scale) << k;
  }
}

}  // namespace
}  // namespace ddp::model
