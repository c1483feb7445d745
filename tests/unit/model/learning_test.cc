// The built-in models learn: the MLP and the CNN on the synthetic dataset reach high test
// accuracy in a few hundred plain-SGD steps, and the MLP gets > 75% on Fashion-MNIST after one
// epoch over a 10k subset (skipped when the dataset package is not installed).
// Plain SGD is written out here so that the test depends on nothing but the model and data.
#include <gtest/gtest.h>

#include <chrono>

#include "worker/data/batch_iterator.h"
#include "worker/data/fashion_mnist.h"
#include "worker/data/synthetic_dataset.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"

namespace ddp::model {
namespace {

void sgdStep(Module& m, float lr) {
  for (Parameter* p : m.parameters()) {
    float* w = static_cast<float*>(p->data);
    const float* g = static_cast<const float*>(p->grad);
    for (size_t i = 0; i < p->numel(); ++i) w[i] -= lr * g[i];
  }
}

// Trains for `epochs` over `train` and returns the accuracy on `test`.
double trainAndEvaluate(Module& m, const data::Dataset& train, const data::Dataset& test,
                        int epochs, int batch, float lr) {
  auto sampler = data::DistributedSampler::create({.datasetSize = train.size(), .seed = 1}).value();
  data::Batch b;
  for (int e = 0; e < epochs; ++e) {
    sampler.setEpoch(e);
    data::BatchIterator it(train, sampler, batch);
    while (it.next(&b)) {
      m.zeroGrad();
      auto st = m.forwardBackward(b.images.data(), b.labels.data(), b.size);
      EXPECT_TRUE(st.isOk()) << st.status();
      sgdStep(m, lr);
    }
  }
  auto eval = m.evaluateAll(test.images.data(), test.labels.data(), test.size(), 256);
  EXPECT_TRUE(eval.isOk());
  return eval->accuracy();
}

TEST(LearningTest, MlpLearnsSyntheticClusters) {
  data::SyntheticConfig cfg{.samples = 2048, .sampleShape = {32}, .classes = 10, .seed = 4};
  auto train = data::makeSyntheticDataset(cfg).value();
  cfg.samples = 1000;
  auto test = data::makeSyntheticDataset(cfg, data::SyntheticSplit::kTest).value();
  auto m = buildMlp({.inputs = 32, .hidden = {64}, .classes = 10}, {.seed = 1}).value();
  const double before = m->evaluateAll(test.images.data(), test.labels.data(), test.size(), 256)->accuracy();
  const double after = trainAndEvaluate(*m, train, test, 4, 32, 0.1f);  // 256 steps
  EXPECT_LT(before, 0.3);
  EXPECT_GT(after, 0.95);
}

TEST(LearningTest, CnnLearnsSyntheticImages) {
  // Pixel-independent clusters suit a CNN less than an MLP: use a wider separation.
  data::SyntheticConfig cfg{.samples = 1024, .sampleShape = {1, 12, 12}, .classes = 4,
                            .separation = 16.f, .seed = 5};
  auto train = data::makeSyntheticDataset(cfg).value();
  cfg.samples = 400;
  auto test = data::makeSyntheticDataset(cfg, data::SyntheticSplit::kTest).value();
  auto m = buildCnn({.input = {1, 12, 12}, .convChannels = {4, 8}, .hidden = {32}, .classes = 4},
                    {.seed = 2}).value();
  EXPECT_GT(trainAndEvaluate(*m, train, test, 3, 32, 0.05f), 0.95);
}

TEST(LearningTest, MlpOnFashionMnistSubsetOneEpoch) {
  if (!data::fashionMnistAvailable()) GTEST_SKIP() << "package dataset-fashion-mnist not installed";
  auto train = data::loadFashionMnist(data::Split::kTrain, {.limit = 10000});
  auto test = data::loadFashionMnist(data::Split::kTest, {.limit = 5000});
  ASSERT_TRUE(train.isOk() && test.isOk());
  auto m = buildMlp({.inputs = 784, .hidden = {128}, .classes = 10}, {.seed = 3}).value();
  const auto t0 = std::chrono::steady_clock::now();
  const double acc = trainAndEvaluate(*m, *train, *test, 1, 32, 0.05f);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(acc, 0.75);
  RecordProperty("accuracy", std::to_string(acc));
  std::printf("fashion-mnist 10k subset, 1 epoch: test accuracy %.4f in %.2f s\n", acc, secs);
}

}  // namespace
}  // namespace ddp::model
