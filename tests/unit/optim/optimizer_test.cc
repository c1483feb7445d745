// Optimizers against hand-computed PyTorch-semantics updates (double precision oracles written
// out step by step here, independent of kernels/optim_ops.cc).
#include "worker/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace ddp::optim {
namespace {

struct Tensor {
  Parameter p;
  std::vector<float> data, grad;
  Tensor(std::string name, std::vector<float> values) : data(std::move(values)), grad(data.size(), 0.f) {
    p.name = std::move(name);
    p.shape = {static_cast<int64_t>(data.size())};
    p.data = data.data();
    p.grad = grad.data();
  }
};

TEST(OptimizerTest, SgdPlainAndWeightDecayMatchHandComputation) {
  Tensor t("w", {1.f, -2.f});
  auto opt = makeOptimizer(OptimizerConfig::sgd(0.1f, 0.f, 0.f, /*wd=*/0.5f), {&t.p});
  ASSERT_TRUE(opt.isOk()) << opt.status();
  t.grad = {0.2f, 0.4f};
  ASSERT_TRUE((*opt)->step().isOk());
  // d = g + wd*p = {0.7, -0.6}; p -= 0.1*d
  EXPECT_FLOAT_EQ(t.data[0], 1.f - 0.1f * 0.7f);
  EXPECT_FLOAT_EQ(t.data[1], -2.f + 0.1f * 0.6f);
  EXPECT_EQ((*opt)->stateBytes(), 0u);
}

TEST(OptimizerTest, SgdMomentumDampeningNesterovMatchOracle) {
  for (bool nesterov : {false, true}) {
    const double lr = 0.05, mom = 0.9, damp = nesterov ? 0.0 : 0.3, wd = 0.01;
    Tensor t("w", {0.5f, -1.5f, 3.f});
    auto opt = makeOptimizer(OptimizerConfig::sgd(lr, mom, damp, wd, nesterov), {&t.p});
    ASSERT_TRUE(opt.isOk()) << opt.status();
    std::vector<double> p(t.data.begin(), t.data.end()), buf(3, 0);
    for (int step = 0; step < 4; ++step) {
      for (int i = 0; i < 3; ++i) t.grad[i] = 0.1f * (i + 1) * (step % 2 ? -1 : 1) + 0.05f * step;
      ASSERT_TRUE((*opt)->step().isOk());
      for (int i = 0; i < 3; ++i) {
        double d = t.grad[i] + wd * p[i];
        buf[i] = step == 0 ? d : mom * buf[i] + (1 - damp) * d;  // first step: buf = d, no dampening
        double upd = nesterov ? d + mom * buf[i] : buf[i];
        p[i] -= lr * upd;
        EXPECT_NEAR(t.data[i], p[i], 1e-6) << "nesterov=" << nesterov << " step " << step << " i " << i;
        EXPECT_NEAR((*opt)->state(0).slots[0][i], buf[i], 1e-6);
      }
    }
    EXPECT_EQ((*opt)->state(0).step, 4);
  }
}

TEST(OptimizerTest, AdamFirstTwoStepsByHand) {
  Tensor t("w", {1.f});
  auto opt = makeOptimizer(OptimizerConfig::adam(0.1f), {&t.p});
  ASSERT_TRUE(opt.isOk());
  t.grad = {0.5f};
  ASSERT_TRUE((*opt)->step().isOk());
  // Step 1: m_hat = g, v_hat = g^2 -> p -= lr * g / (|g| + eps) = 0.1 (up to eps).
  EXPECT_NEAR(t.data[0], 0.9, 1e-6);
  t.grad = {0.25f};
  ASSERT_TRUE((*opt)->step().isOk());
  // m = 0.9*0.05 + 0.1*0.25 = 0.07; v = 0.999*0.00025 + 0.001*0.0625 = 0.00031225
  // p -= 0.1/(1-0.81) * 0.07 / (sqrt(0.00031225)/sqrt(1-0.998001) + 1e-8)
  const double expected = 0.9 - (0.1 / 0.19) * 0.07 / (std::sqrt(0.00031225) / std::sqrt(0.001999) + 1e-8);
  EXPECT_NEAR(t.data[0], expected, 2e-6);
  EXPECT_NEAR((*opt)->state(0).slots[0][0], 0.07, 1e-7);
  EXPECT_NEAR((*opt)->state(0).slots[1][0], 0.00031225, 1e-8);  // f32 betas
}

// Double-precision Adam/AdamW oracle (torch.optim single-tensor semantics).
void adamOracle(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v,
                const std::vector<float>& g, int step, double lr, double b1, double b2, double eps,
                double wd, bool decoupled) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (decoupled) p[i] *= 1 - lr * wd;
    double gi = g[i] + (decoupled ? 0.0 : wd * p[i]);
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
  }
}

TEST(OptimizerTest, AdamAndAdamWMatchOracleAndDiffer) {
  std::vector<float> finalAdam, finalAdamW;
  for (bool decoupled : {false, true}) {
    const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-3, wd = 0.1;
    Tensor t("w", {0.3f, -0.7f, 1.1f, 0.f});
    auto cfg = decoupled ? OptimizerConfig::adamw(lr, b1, b2, eps, wd) : OptimizerConfig::adam(lr, b1, b2, eps, wd);
    auto opt = makeOptimizer(cfg, {&t.p});
    ASSERT_TRUE(opt.isOk());
    EXPECT_EQ((*opt)->name(), decoupled ? "adamw" : "adam");
    std::vector<double> p(t.data.begin(), t.data.end()), m(4, 0), v(4, 0);
    for (int step = 1; step <= 5; ++step) {
      for (int i = 0; i < 4; ++i) t.grad[i] = std::sin(1.3f * step + i);
      ASSERT_TRUE((*opt)->step().isOk());
      adamOracle(p, m, v, t.grad, step, lr, b1, b2, eps, wd, decoupled);
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(t.data[i], p[i], 1e-6) << "step " << step;
    }
    (decoupled ? finalAdamW : finalAdam) = t.data;
  }
  EXPECT_NE(finalAdam, finalAdamW);  // L2 vs decoupled decay really differ
}

TEST(OptimizerTest, GradScaleEqualsScaledGradient) {
  Tensor a("a", {1.f, 2.f}), b("b", {1.f, 2.f});
  auto oa = makeOptimizer(OptimizerConfig::adam(0.01f), {&a.p});
  auto ob = makeOptimizer(OptimizerConfig::adam(0.01f), {&b.p});
  a.grad = {0.5f, -1.f};
  b.grad = {0.25f, -0.5f};
  ASSERT_TRUE((*oa)->step(0.5f).isOk());
  ASSERT_TRUE((*ob)->step().isOk());
  EXPECT_EQ(a.data, b.data);
}

TEST(OptimizerTest, NullGradIsSkippedAndSubsetStepEqualsFullStep) {
  Tensor a("a", {1.f, 2.f}), b("b", {3.f});
  Tensor a2("a", {1.f, 2.f}), b2("b", {3.f});
  auto full = makeOptimizer(OptimizerConfig::adam(0.01f), {&a.p, &b.p});
  auto split = makeOptimizer(OptimizerConfig::adam(0.01f), {&a2.p, &b2.p});
  for (int s = 0; s < 3; ++s) {
    a.grad = a2.grad = {0.1f * s, -0.3f};
    b.grad = b2.grad = {0.7f - s};
    ASSERT_TRUE((*full)->step().isOk());
    std::vector<size_t> second{1}, first{0};
    ASSERT_TRUE((*split)->stepParameters(second).isOk());
    ASSERT_TRUE((*split)->stepParameters(first).isOk());
  }
  EXPECT_EQ(a.data, a2.data);
  EXPECT_EQ(b.data, b2.data);

  b.p.grad = nullptr;
  std::vector<float> before = b.data;
  ASSERT_TRUE((*full)->step().isOk());
  EXPECT_EQ(b.data, before);
  EXPECT_EQ((*full)->state(1).step, 3);
  EXPECT_EQ((*full)->state(0).step, 4);
  std::vector<size_t> bad{7};
  EXPECT_EQ((*full)->stepParameters(bad).code(), StatusCode::kOutOfRange);
}

// A weight-decay mask steps the masked-out parameters as an optimizer without decay would, and
// the others as one with it (oracle: two optimizers, one per group), for SGD and AdamW.
TEST(OptimizerTest, WeightDecayMaskDecaysOnlyTheMaskedParameters) {
  for (const OptimizerConfig& decayed : {OptimizerConfig::adamw(0.01f, 0.9f, 0.999f, 1e-8f, 0.1f),
                                         OptimizerConfig::sgd(0.1f, 0.9f, 0.f, 0.05f)}) {
    SCOPED_TRACE(optimizerKindName(decayed.kind));
    OptimizerConfig plain = decayed;
    plain.weightDecay = 0.f;
    Tensor w("w", {1.f, -2.f}), b("b", {3.f});
    Tensor w2("w", {1.f, -2.f}), b2("b", {3.f});
    auto masked = makeOptimizer(decayed, {&w.p, &b.p});
    ASSERT_TRUE(masked.isOk());
    (*masked)->setWeightDecayMask({true, false});
    auto withDecay = makeOptimizer(decayed, {&w2.p});
    auto without = makeOptimizer(plain, {&b2.p});
    ASSERT_TRUE(withDecay.isOk() && without.isOk());
    for (int s = 0; s < 4; ++s) {
      w.grad = w2.grad = {0.2f * s, -0.5f};
      b.grad = b2.grad = {0.3f - s};
      ASSERT_TRUE((*masked)->step().isOk());
      ASSERT_TRUE((*withDecay)->step().isOk());
      ASSERT_TRUE((*without)->step().isOk());
    }
    EXPECT_EQ(w.data, w2.data);
    EXPECT_EQ(b.data, b2.data);
    EXPECT_EQ((*masked)->config().weightDecay, decayed.weightDecay) << "the decay is restored after the step";
  }
}

TEST(OptimizerTest, StateDictRoundTripContinuesBitwise) {
  for (auto cfg : {OptimizerConfig::sgd(0.1f, 0.9f), OptimizerConfig::adam(0.01f), OptimizerConfig::adamw(0.01f)}) {
    Tensor a("a", {1.f, -2.f, 0.5f});
    auto opt = makeOptimizer(cfg, {&a.p});
    for (int s = 0; s < 3; ++s) {
      a.grad = {0.3f * s, -0.2f, 0.1f};
      ASSERT_TRUE((*opt)->step().isOk());
    }
    (*opt)->setLr(0.005f);
    std::string sd = (*opt)->stateDict();
    Tensor b("a", a.data);
    auto cfg2 = cfg;
    cfg2.lr = 123.f;  // overwritten by the load
    auto opt2 = makeOptimizer(cfg2, {&b.p});
    ASSERT_TRUE((*opt2)->loadStateDict(sd).isOk());
    EXPECT_EQ((*opt2)->lr(), 0.005f);
    a.grad = b.grad = {0.4f, 0.4f, -0.9f};
    ASSERT_TRUE((*opt)->step().isOk());
    ASSERT_TRUE((*opt2)->step().isOk());
    EXPECT_EQ(a.data, b.data) << (*opt)->name();
    EXPECT_EQ((*opt)->stateBytes(), (*opt2)->stateBytes());
  }
}

TEST(OptimizerTest, LoadRejectsWrongKindShapeAndCorruption) {
  Tensor a("a", {1.f, 2.f}), b("b", {1.f, 2.f, 3.f});
  auto adam = makeOptimizer(OptimizerConfig::adam(), {&a.p});
  ASSERT_TRUE((*adam)->step().isOk());
  std::string sd = (*adam)->stateDict();
  auto sgd = makeOptimizer(OptimizerConfig::sgd(0.1f), {&a.p});
  EXPECT_EQ((*sgd)->loadStateDict(sd).code(), StatusCode::kInvalidArgument);
  auto other = makeOptimizer(OptimizerConfig::adam(), {&b.p});
  Status st = (*other)->loadStateDict(sd);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("elements"), std::string::npos) << st;
  std::string bad = sd;
  bad[bad.size() - 3] ^= 0x40;
  EXPECT_EQ((*adam)->loadStateDict(bad).code(), StatusCode::kDataLoss);
}

TEST(OptimizerTest, ConfigValidationAndParameterChecks) {
  EXPECT_FALSE(OptimizerConfig::sgd(-1.f).validate().isOk());
  EXPECT_FALSE(OptimizerConfig::sgd(0.1f, 0.f, 0.f, 0.f, /*nesterov=*/true).validate().isOk());
  EXPECT_FALSE(OptimizerConfig::adam(0.1f, 1.0f).validate().isOk());
  EXPECT_FALSE(OptimizerConfig::adam(0.1f, 0.9f, 0.999f, -1.f).validate().isOk());
  Tensor a("a", {1.f});
  a.p.dtype = DType::kF64;
  EXPECT_EQ(makeOptimizer(OptimizerConfig::adam(), {&a.p}).status().code(), StatusCode::kInvalidArgument);
  // CUDA parameters: accepted in a CUDA build, Unimplemented without (optimizer_device_test).
  EXPECT_EQ(OptimizerConfig::adamw().weightDecay, 1e-2f);
}

}  // namespace
}  // namespace ddp::optim
