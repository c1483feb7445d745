// Declared layer stacks (worker/model/sequential_builder.h):
//  - a small stack with every layer kind: its gradients against central finite differences (in
//    double, of its own float loss, with dropout's mask fixed by the step seed), ready() once per
//    parameter in descending order, parameters named and shaped as torch.nn.Sequential's;
//  - the MLP and CNN presets build the same layers: the same stack declared by hand gives bitwise
//    the same parameters, gradients and SGD steps;
//  - dropout: deterministic from its seed, different across seeds, off in evaluation;
//  - the mean squared error: the gradient of a linear model in closed form, and zero at the
//    least-squares solution of the normal equations;
//  - a shape mismatch is refused naming the layer's path and both shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/split_mix_rng.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"
#include "worker/model/sequential_builder.h"

namespace ddp::model {
namespace {

struct Data {
  std::vector<float> x, values;
  std::vector<int32_t> y;
  Batch classes(int n) const { return Batch{.size = n, .features = x.data(), .classes = y.data()}; }
  Batch regression(int n) const { return Batch{.size = n, .features = x.data(), .values = values.data()}; }
};

Data randomData(int64_t features, int n, int classes, uint64_t seed) {
  SplitMixRng rng(seed);
  Data d;
  d.x.resize(static_cast<size_t>(n) * features);
  for (float& v : d.x) v = rng.normal();
  for (int i = 0; i < n; ++i) d.y.push_back(static_cast<int32_t>(rng.below(classes)));
  return d;
}

// Every kind: conv2d, residual (conv2d, tanh), maxpool2d, avgpool2d, sigmoid, flatten, layernorm,
// dropout, linear, gelu, residual (linear, relu), linear. Input [2, 6, 6], 4 classes.
std::vector<LayerSpec> everyKind() {
  using K = LayerKind;
  return {{.kind = K::kConv2d, .out = 3, .kernel = 3, .padding = 1},
          {.kind = K::kResidual, .layers = {{.kind = K::kConv2d, .out = 3, .kernel = 3, .padding = 1}, {.kind = K::kTanh}}},
          {.kind = K::kMaxPool2d, .kernel = 2},
          {.kind = K::kAvgPool2d, .kernel = 2, .stride = 1},
          {.kind = K::kSigmoid},
          {.kind = K::kFlatten},
          {.kind = K::kLayerNorm},
          {.kind = K::kDropout, .p = 0.3},
          {.kind = K::kLinear, .out = 5},
          {.kind = K::kGelu},
          {.kind = K::kResidual, .layers = {{.kind = K::kLinear, .out = 5}, {.kind = K::kRelu}}},
          {.kind = K::kLinear, .out = 4}};
}

TEST(SequentialTest, EveryLayerKindMatchesFiniteDifferences) {
  auto built = buildSequential(everyKind(), {2, 6, 6}, {.seed = 5});
  ASSERT_TRUE(built.isOk()) << built.status();
  Sequential& m = **built;
  const Data d = randomData(72, 3, 4, 9);
  const Batch b = d.classes(3);
  const uint64_t seed = 1234;
  std::vector<size_t> order;
  m.zeroGrad();
  ASSERT_TRUE(m.forwardBackward(b, [&](size_t i) { order.push_back(i); }, 1.f, seed).isOk());
  const std::vector<Parameter*> params = m.parameters();
  ASSERT_EQ(order.size(), params.size());
  for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], params.size() - 1 - k);
  std::vector<std::vector<float>> grads;
  for (Parameter* p : params) {
    grads.emplace_back(static_cast<float*>(p->grad), static_cast<float*>(p->grad) + p->numel());
  }
  // The training loss with the same dropout mask (the step's seed).
  const auto loss = [&] {
    auto s = m.forwardBackward(b, {}, 1.f, seed);
    EXPECT_TRUE(s.isOk()) << s.status();
    return s.isOk() ? s->meanLoss() : 0.0;
  };
  for (size_t j = 0; j < params.size(); ++j) {
    auto* w = static_cast<float*>(params[j]->data);
    const size_t n = params[j]->numel();
    for (size_t k = 0; k < std::min<size_t>(n, 6); ++k) {
      const size_t i = (k * 7919 + 3) % n;
      const float saved = w[i];
      const float eps = 2e-3f;
      w[i] = saved + eps;
      const double up = loss();
      w[i] = saved - eps;
      const double down = loss();
      w[i] = saved;
      const double fd = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grads[j][i], fd, 2e-3 + 0.05 * std::fabs(fd)) << params[j]->name << "[" << i << "]";
    }
  }
}

TEST(SequentialTest, ParametersAreNamedAndShapedAsTorchSequential) {
  auto m = buildSequential(everyKind(), {2, 6, 6}, {.seed = 5}).value();
  std::vector<std::string> names;
  for (Parameter* p : m->parameters()) names.push_back(p->name);
  const std::vector<std::string> want = {"0.weight", "0.bias", "1.0.weight", "1.0.bias", "6.weight", "6.bias",
                                         "8.weight", "8.bias", "10.0.weight", "10.0.bias", "11.weight", "11.bias"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(m->parameters()[0]->shape, (std::vector<int64_t>{3, 2, 3, 3}));  // Conv2d [out, in, k, k]
  EXPECT_EQ(m->parameters()[6]->shape, (std::vector<int64_t>{5, 12}));       // Linear [out, in]
  // LayerNorm starts at weight 1, bias 0.
  const auto* gamma = static_cast<const float*>(m->parameters()[4]->data);
  const auto* beta = static_cast<const float*>(m->parameters()[5]->data);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(gamma[i], 1.f);
    EXPECT_EQ(beta[i], 0.f);
  }
}

// Steps of plain SGD on both models; every parameter must stay bitwise equal.
void expectSameTraining(Sequential& a, Sequential& b, int64_t features, int classes) {
  ASSERT_EQ(a.parameters().size(), b.parameters().size());
  for (int step = 0; step < 3; ++step) {
    const Data d = randomData(features, 5, classes, 40 + step);
    for (Sequential* m : {&a, &b}) {
      m->zeroGrad();
      ASSERT_TRUE(m->forwardBackward(d.classes(5), {}, 1.f, step).isOk());
      for (Parameter* p : m->parameters()) {
        auto* w = static_cast<float*>(p->data);
        const auto* g = static_cast<const float*>(p->grad);
        for (size_t i = 0; i < p->numel(); ++i) w[i] -= 0.1f * g[i];
      }
    }
    for (size_t i = 0; i < a.parameters().size(); ++i) {
      Parameter* p = a.parameters()[i];
      ASSERT_EQ(p->shape, b.parameters()[i]->shape);
      EXPECT_EQ(std::memcmp(p->data, b.parameters()[i]->data, p->bytes()), 0) << p->name << " step " << step;
    }
  }
}

TEST(SequentialTest, TheMlpAndCnnPresetsAreTheirDeclaredStacks) {
  using K = LayerKind;
  auto mlp = buildMlp({.inputs = 12, .hidden = {9, 7}, .classes = 4, .activation = kernels::Activation::kTanh},
                      {.seed = 3}).value();
  auto declared = buildSequential({{.kind = K::kLinear, .out = 9}, {.kind = K::kTanh}, {.kind = K::kLinear, .out = 7},
                                   {.kind = K::kTanh}, {.kind = K::kLinear, .out = 4}},
                                  {12}, {.seed = 3}).value();
  expectSameTraining(*mlp, *declared, 12, 4);
  auto cnn = buildCnn({.input = {1, 8, 8}, .convChannels = {3, 4}, .hidden = {6}, .classes = 3}, {.seed = 4}).value();
  auto stack = buildSequential({{.kind = K::kConv2d, .out = 3, .kernel = 3, .padding = 1},
                                {.kind = K::kMaxPool2d, .kernel = 2},
                                {.kind = K::kRelu},
                                {.kind = K::kConv2d, .out = 4, .kernel = 3, .padding = 1},
                                {.kind = K::kMaxPool2d, .kernel = 2},
                                {.kind = K::kRelu},
                                {.kind = K::kFlatten},
                                {.kind = K::kLinear, .out = 6},
                                {.kind = K::kRelu},
                                {.kind = K::kLinear, .out = 3}},
                               {1, 8, 8}, {.seed = 4}).value();
  expectSameTraining(*cnn, *stack, 64, 3);
}

TEST(SequentialTest, DropoutIsDeterministicFromItsSeedAndOffInEvaluation) {
  using K = LayerKind;
  const std::vector<LayerSpec> layers = {{.kind = K::kLinear, .out = 16}, {.kind = K::kDropout, .p = 0.5},
                                         {.kind = K::kLinear, .out = 3}};
  auto m = buildSequential(layers, {8}, {.seed = 1}).value();
  auto plain = buildSequential({layers[0], layers[2]}, {8}, {.seed = 1}).value();  // same parameter indices
  const Data d = randomData(8, 6, 3, 2);
  const double a = m->forwardBackward(d.classes(6), {}, 1.f, 77).value().lossSum;
  const double b = m->forwardBackward(d.classes(6), {}, 1.f, 77).value().lossSum;
  const double c = m->forwardBackward(d.classes(6), {}, 1.f, 78).value().lossSum;
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(m->evaluate(d.classes(6)).value().lossSum, plain->evaluate(d.classes(6)).value().lossSum);
}

// y = w.x + b on 3 features, loss mean (y - t)^2: dw = 2/N sum (y_i - t_i) x_i, db = 2/N sum (y_i - t_i);
// at the least-squares solution (normal equations, in double) both vanish.
TEST(SequentialTest, MeanSquaredErrorMatchesTheClosedForm) {
  auto m = buildSequential({{.kind = LayerKind::kLinear, .out = 1}}, {3}, {.seed = 2}).value();
  const int n = 40;
  Data d = randomData(3, n, 2, 5);
  SplitMixRng rng(6);
  for (int i = 0; i < n; ++i) {
    d.values.push_back(1.5f * d.x[3 * i] - 2.f * d.x[3 * i + 1] + 0.5f * d.x[3 * i + 2] + 0.25f + 0.1f * rng.normal());
  }
  auto* w = static_cast<float*>(m->parameters()[0]->data);
  auto* bias = static_cast<float*>(m->parameters()[1]->data);
  double lossWant = 0, gw[3] = {0, 0, 0}, gb = 0;
  for (int i = 0; i < n; ++i) {
    const double e = double(w[0]) * d.x[3 * i] + double(w[1]) * d.x[3 * i + 1] + double(w[2]) * d.x[3 * i + 2] +
                     bias[0] - d.values[i];
    lossWant += e * e / n;
    for (int j = 0; j < 3; ++j) gw[j] += 2 * e * d.x[3 * i + j] / n;
    gb += 2 * e / n;
  }
  m->zeroGrad();
  auto s = m->forwardBackward(d.regression(n));
  ASSERT_TRUE(s.isOk()) << s.status();
  EXPECT_NEAR(s->meanLoss(), lossWant, 1e-5 * (1 + lossWant));
  EXPECT_EQ(s->correct, 0);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(static_cast<float*>(m->parameters()[0]->grad)[j], gw[j], 1e-4);
  EXPECT_NEAR(static_cast<float*>(m->parameters()[1]->grad)[0], gb, 1e-4);
  // Least squares: solve (A^T A) beta = A^T t for A = [x, 1] by Gaussian elimination.
  double ata[4][5] = {};
  for (int i = 0; i < n; ++i) {
    const double a[4] = {d.x[3 * i], d.x[3 * i + 1], d.x[3 * i + 2], 1.0};
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) ata[r][c] += a[r] * a[c];
      ata[r][4] += a[r] * d.values[i];
    }
  }
  for (int p = 0; p < 4; ++p) {
    for (int r = 0; r < 4; ++r) {
      if (r == p) continue;
      const double f = ata[r][p] / ata[p][p];
      for (int c = p; c < 5; ++c) ata[r][c] -= f * ata[p][c];
    }
  }
  for (int j = 0; j < 3; ++j) w[j] = static_cast<float>(ata[j][4] / ata[j][j]);
  bias[0] = static_cast<float>(ata[3][4] / ata[3][3]);
  m->zeroGrad();
  ASSERT_TRUE(m->forwardBackward(d.regression(n)).isOk());
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(static_cast<float*>(m->parameters()[0]->grad)[j], 0.f, 1e-5);
  EXPECT_NEAR(static_cast<float*>(m->parameters()[1]->grad)[0], 0.f, 1e-5);
  EXPECT_NEAR(w[0], 1.5f, 0.1f);  // the generating weights, within the noise
}

TEST(SequentialTest, AShapeMismatchIsRefusedNamingTheLayer) {
  auto m = buildSequential({{.kind = LayerKind::kConv2d, .out = 2, .kernel = 3}, {.kind = LayerKind::kLinear, .out = 4}},
                           {1, 5, 5}, {});
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("spec.model.stack[1].linear"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("[2, 3, 3]"), std::string::npos) << m.status();
  Batch tokens{.size = 1, .tokensPerSample = 2};
  auto ok = buildSequential({{.kind = LayerKind::kLinear, .out = 2}}, {3}, {}).value();
  EXPECT_EQ(ok->evaluate(tokens).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::model
