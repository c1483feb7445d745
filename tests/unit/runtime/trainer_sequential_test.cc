// The trainer on declared layer stacks (spec.model.type sequential) over LocalBackend (ranks as
// threads) on synthetic data. Oracles: one rank on the concatenated batch, and the mlp preset
// (type: mlp) trained from the same job: the same stack declared by hand gives bitwise the same
// parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/support/local_backend.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/model/sequential_builder.h"
#include "worker/training/trainer.h"

namespace ddp::runtime {
namespace {

using Params = std::vector<std::vector<float>>;

Params train(int world, const TrainerConfig& config) {
  std::vector<Params> out(static_cast<size_t>(world));
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    auto trainer = Trainer::create(config, backend, {});
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
    for (Parameter* p : (*trainer)->model().parameters()) {
      const auto* d = static_cast<const float*>(p->data);
      out[static_cast<size_t>(rank)].emplace_back(d, d + p->numel());
    }
  });
  return out[0];
}

TrainerConfig configOf(const std::string& model, const std::string& extra = "") {
  const std::string yaml = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: seq}\nspec:\n  model:\n" + model +
                           "  data: {dataset: synthetic, batchSize: 16, shuffle: false,\n"
                           "         synthetic: {samples: 256, features: 24, classes: 4, separation: 4}}\n"
                           "  optimizer: {type: sgd, lr: 0.05, momentum: 0.9}\n  epochs: 1\n  seed: 5\n" + extra;
  auto spec = parseJobSpec(yaml);
  EXPECT_TRUE(spec.isOk()) << spec.status();
  auto config = trainerConfigFromJobSpec(spec.value());
  EXPECT_TRUE(config.isOk()) << config.status();
  return config.value();
}

TEST(TrainerSequentialTest, TheMlpLayerListTrainsBitwiseLikeTypeMlp) {
  const Params mlp = train(2, configOf("    type: mlp\n    hidden: [16, 8]\n    activation: gelu\n"));
  const Params seq = train(2, configOf("    type: sequential\n    stack:\n      - linear: {out: 16}\n      - gelu: {}\n"
                                       "      - linear: {out: 8}\n      - gelu: {}\n      - linear: {out: 4}\n"));
  ASSERT_EQ(mlp.size(), seq.size());
  for (size_t i = 0; i < mlp.size(); ++i) {
    ASSERT_EQ(mlp[i].size(), seq[i].size());
    EXPECT_EQ(std::memcmp(mlp[i].data(), seq[i].data(), mlp[i].size() * sizeof(float)), 0) << "parameter " << i;
  }
}

TEST(TrainerSequentialTest, TwoRanksMatchOneRankOnTheSameGlobalBatch) {
  const std::string stack =
      "    type: sequential\n    stack:\n      - linear: {out: 12}\n      - layernorm: {}\n      - tanh: {}\n"
      "      - residual: {layers: [{linear: {out: 12}}, {sigmoid: {}}]}\n      - linear: {out: 4}\n";
  TrainerConfig two = configOf(stack);
  two.nominalWorldSize = 0;  // 16 samples a rank a step, whatever the world size
  TrainerConfig one = two;
  one.batchSize = 2 * two.batchSize;
  const Params a = train(2, two), b = train(1, one);
  ASSERT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  EXPECT_LT(worst, 2e-5f);
  // It trained: the parameters moved well away from their initial values.
  auto fresh = model::buildSequential(two.stack, two.stackInput, {.seed = two.seed}).value();
  float moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto* init = static_cast<const float*>(fresh->parameters()[i]->data);
    for (size_t j = 0; j < a[i].size(); ++j) moved = std::max(moved, std::fabs(a[i][j] - init[j]));
  }
  EXPECT_GT(moved, 1e-2f);
}

// Data whose shape only the worker learns (stackInput empty): the stack is checked against the
// loaded samples before the first step, naming the layer that does not fit.
TEST(TrainerSequentialTest, TheWorkerChecksTheStackAgainstTheLoadedData) {
  TrainerConfig c = configOf("    type: sequential\n    stack: [{linear: {out: 4}}]\n");
  c.stackInput.clear();
  EXPECT_EQ(train(1, c).size(), 2u);  // linear 24 -> 4: weight and bias
  c.stack = {{.kind = LayerKind::kConv2d, .out = 2, .kernel = 3}, {.kind = LayerKind::kFlatten},
             {.kind = LayerKind::kLinear, .out = 4}};
  comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
    auto trainer = Trainer::create(c, backend, {});
    ASSERT_FALSE(trainer.isOk());
    EXPECT_NE(trainer.status().message().find("spec.model.stack[0].conv2d"), std::string::npos) << trainer.status();
    EXPECT_NE(trainer.status().message().find("[24]"), std::string::npos) << trainer.status();
  });
}

}  // namespace
}  // namespace ddp::runtime
