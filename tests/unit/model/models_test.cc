// The built-in MLP and CNN as Modules: finite-difference gradient checks through the softmax
// cross-entropy loss, GradReadyFn once per parameter in descending order, deterministic init,
// parameter (de)serialization with name/shape checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/split_mix_rng.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"
#include "worker/model/param_io.h"

namespace ddp::model {
namespace {

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch randomBatch(const Module& m, int batch, int classes, uint64_t seed) {
  SplitMixRng rng(seed);
  Batch b;
  b.x.resize(batch * shapeNumel(const_cast<Module&>(m).inputShape()));
  for (float& v : b.x) v = rng.normal();
  for (int i = 0; i < batch; ++i) b.y.push_back(static_cast<int32_t>(rng.below(classes)));
  return b;
}

// Checks every parameter's gradient of the mean loss against central differences.
void checkModelGradients(Module& m, const Batch& b, int batch) {
  m.zeroGrad();
  std::vector<size_t> order;
  auto st = m.forwardBackward(b.x.data(), b.y.data(), batch, [&](size_t i) { order.push_back(i); });
  ASSERT_TRUE(st.isOk()) << st.status();
  auto params = m.parameters();
  ASSERT_EQ(order.size(), params.size());
  for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], params.size() - 1 - k);

  auto loss = [&] { return m.evaluate(b.x.data(), b.y.data(), batch).value().meanLoss(); };
  const float eps = 5e-4f;
  for (Parameter* p : params) {
    float* data = static_cast<float*>(p->data);
    const float* grad = static_cast<const float*>(p->grad);
    double gmax = 1e-4;
    for (size_t i = 0; i < p->numel(); ++i) gmax = std::max(gmax, std::fabs(double(grad[i])));
    const size_t step = std::max<size_t>(1, p->numel() / 25);
    for (size_t i = 0; i < p->numel(); i += step) {
      const float orig = data[i];
      data[i] = orig + eps;
      const double up = loss();
      data[i] = orig - eps;
      const double down = loss();
      data[i] = orig;
      EXPECT_NEAR((up - down) / (2 * eps), grad[i], 3e-2 * gmax + 2e-4) << p->name << "[" << i << "]";
    }
  }
}

// An allocation the memory cannot hold (injected: a single allocation above 1 MiB fails, as a
// real giant malloc would abort under AddressSanitizer) is a ResourceExhausted error naming the
// tensor and its size, not a segfault in the memset after it (issue: hidden [100000000]).
TEST(ModelsTest, AnAllocationFailureIsResourceExhaustedNamingTheTensor) {
  MlpConfig c;
  c.inputs = 784;
  c.hidden = {100000};
  c.classes = 10;
  ModelOptions o;
  o.maxAllocationBytes = 1 << 20;
  auto model = buildMlp(c, o);
  ASSERT_FALSE(model.isOk());
  EXPECT_EQ(model.status().code(), StatusCode::kResourceExhausted) << model.status();
  EXPECT_NE(model.status().message().find("cannot allocate fc0.weight: 313600000 bytes (0.3 GiB) of host memory"),
            std::string::npos)
      << model.status();
  o.maxAllocationBytes = 0;  // the same model within the limit builds
  c.hidden = {16};
  EXPECT_TRUE(buildMlp(c, o).isOk());
}

TEST(ModelsTest, MlpGradientsForEveryActivation) {
  for (auto a : {kernels::Activation::kRelu, kernels::Activation::kTanh, kernels::Activation::kGelu}) {
    SCOPED_TRACE(kernels::activationName(a));
    MlpConfig cfg{.inputs = 6, .hidden = {5, 4}, .classes = 3, .activation = a};
    auto m = buildMlp(cfg, {.seed = 3});
    ASSERT_TRUE(m.isOk()) << m.status();
    EXPECT_EQ((*m)->parameters().size(), 6u);
    EXPECT_EQ((*m)->numParameters(), size_t{6 * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3});
    checkModelGradients(**m, randomBatch(**m, 4, 3, 11), 4);
  }
}

TEST(ModelsTest, CnnGradients) {
  CnnConfig cfg{.input = {1, 8, 8}, .convChannels = {3, 4}, .hidden = {6}, .classes = 3};
  auto m = buildCnn(cfg, {.seed = 5});
  ASSERT_TRUE(m.isOk()) << m.status();
  auto params = (*m)->parameters();
  ASSERT_EQ(params.size(), 8u);
  EXPECT_EQ(params[0]->name, "conv0.weight");
  EXPECT_EQ(params[0]->shape, (std::vector<int64_t>{3, 1, 3, 3}));
  EXPECT_EQ(params[4]->shape, (std::vector<int64_t>{6, 4 * 2 * 2}));
  checkModelGradients(**m, randomBatch(**m, 3, 3, 12), 3);
}

TEST(ModelsTest, SameSeedSameBitsOtherSeedOtherValues) {
  MlpConfig cfg{.inputs = 20, .hidden = {16}, .classes = 4};
  auto a = buildMlp(cfg, {.seed = 42}).value();
  auto b = buildMlp(cfg, {.seed = 42}).value();
  auto c = buildMlp(cfg, {.seed = 43}).value();
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    Parameter* pa = a->parameters()[i];
    EXPECT_EQ(std::memcmp(pa->data, b->parameters()[i]->data, pa->bytes()), 0) << pa->name;
    EXPECT_NE(std::memcmp(pa->data, c->parameters()[i]->data, pa->bytes()), 0) << pa->name;
    // Default init bound 1/sqrt(fanIn) (PyTorch's Linear default).
    const float bound = 1.f / std::sqrt(float(pa->name.rfind("fc0", 0) == 0 ? 20 : 16));
    const float* v = static_cast<const float*>(pa->data);
    for (size_t k = 0; k < pa->numel(); ++k) EXPECT_LE(std::fabs(v[k]), bound);
  }
}

TEST(ModelsTest, GradientsAccumulateUntilZeroGrad) {
  auto m = buildMlp({.inputs = 5, .hidden = {4}, .classes = 3}, {.seed = 1}).value();
  Batch b = randomBatch(*m, 2, 3, 3);
  ASSERT_TRUE(m->forwardBackward(b.x.data(), b.y.data(), 2).isOk());
  Parameter* w = m->parameters()[0];
  std::vector<float> once(static_cast<float*>(w->grad), static_cast<float*>(w->grad) + w->numel());
  ASSERT_TRUE(m->forwardBackward(b.x.data(), b.y.data(), 2).isOk());
  for (size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(static_cast<float*>(w->grad)[i], 2 * once[i]);
  m->zeroGrad();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_EQ(static_cast<float*>(w->grad)[i], 0.f);
}

TEST(ModelsTest, ChangingBatchSizesGiveTheSameGradientsAsAFreshModel) {
  // Buffers grow with the batch (forward on evaluation, backward on training sizes): a step
  // after other sizes must equal the same step on a fresh model.
  CnnConfig cfg{.input = {1, 8, 8}, .convChannels = {3}, .hidden = {5}, .classes = 4};
  auto used = buildCnn(cfg, {.seed = 6}).value();
  auto fresh = buildCnn(cfg, {.seed = 6}).value();
  Batch small = randomBatch(*used, 2, 4, 1), big = randomBatch(*used, 9, 4, 2), mid = randomBatch(*used, 5, 4, 3);
  ASSERT_TRUE(used->forwardBackward(small.x.data(), small.y.data(), 2).isOk());
  ASSERT_TRUE(used->evaluate(big.x.data(), big.y.data(), 9).isOk());
  used->zeroGrad();
  auto a = used->forwardBackward(mid.x.data(), mid.y.data(), 5);
  auto b = fresh->forwardBackward(mid.x.data(), mid.y.data(), 5);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->lossSum, b->lossSum);
  for (size_t i = 0; i < used->parameters().size(); ++i) {
    Parameter* p = used->parameters()[i];
    EXPECT_EQ(std::memcmp(p->grad, fresh->parameters()[i]->grad, p->bytes()), 0) << p->name;
  }
}

TEST(ModelsTest, RejectsOutOfRangeLabelsAndBadConfigs) {
  auto m = buildMlp({.inputs = 5, .hidden = {4}, .classes = 3}, {}).value();
  std::vector<float> x(5, 0.f);
  int32_t bad = 3;
  auto st = m->forwardBackward(x.data(), &bad, 1);
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.status().message().find("label 3"), std::string::npos);
  EXPECT_FALSE(buildMlp({.inputs = 5, .hidden = {0}, .classes = 3}, {}).isOk());
  EXPECT_FALSE(buildCnn({.input = {1, 2, 2}, .convChannels = {4, 4}}, {}).isOk());
  EXPECT_EQ(buildMlp({}, {.device = Device::cuda(0)}).status().code(),
            kernels::cudaDeviceCount() > 0 ? StatusCode::kOk
#if defined(DDP_WITH_CUDA)
                                           : StatusCode::kUnavailable);
#else
                                           : StatusCode::kUnimplemented);
#endif
}

TEST(ModelsTest, ParametersRoundTripAndMismatchesAreNamed) {
  CnnConfig cfg{.input = {1, 8, 8}, .convChannels = {2}, .hidden = {5}, .classes = 3};
  auto a = buildCnn(cfg, {.seed = 1}).value();
  auto b = buildCnn(cfg, {.seed = 2}).value();
  std::string bytes = saveParameters(a->parameters(), a->ops());
  ASSERT_TRUE(loadParameters(bytes, b->parameters(), b->ops()).isOk());
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    Parameter* p = a->parameters()[i];
    EXPECT_EQ(std::memcmp(p->data, b->parameters()[i]->data, p->bytes()), 0);
  }
  // Other shape: the parameter is named and b stays as it was.
  cfg.hidden = {6};
  auto c = buildCnn(cfg, {.seed = 3}).value();
  std::vector<float> before(static_cast<float*>(c->parameters()[0]->data),
                            static_cast<float*>(c->parameters()[0]->data) + 18);
  Status st = loadParameters(bytes, c->parameters(), c->ops());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("fc0.weight"), std::string::npos) << st;
  EXPECT_EQ(std::memcmp(before.data(), c->parameters()[0]->data, before.size() * 4), 0);
  // Corrupt bytes: DataLoss from the CRC.
  std::string corrupt = bytes;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  EXPECT_EQ(loadParameters(corrupt, b->parameters(), b->ops()).code(), StatusCode::kDataLoss);
  EXPECT_EQ(loadParameters(bytes.substr(0, 30), b->parameters(), b->ops()).code(),
            StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ddp::model
