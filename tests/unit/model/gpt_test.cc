// The GPT language model (worker/model/gpt.h) on the CPU ops:
//  - its gradients against central finite differences (in double, step 2e-3) of its own float
//    loss, eight entries of every parameter tensor, in each variant (layernorm / rmsnorm,
//    learned positions / rope, tied / untied);
//  - ready() once per parameter, in strictly descending order (what the DDP reducer needs);
//  - GPT-2 init: the loss at init is close to ln(vocab), a uniform guess; the same seed gives
//    bitwise the same parameters and loss;
//  - it learns: a short SGD run on a repeating sequence drives the loss far below ln(vocab);
//  - dropout is deterministic from its seed and off in evaluation;
//  - a token outside the vocabulary is refused naming its sample and position.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/layer_ops.h"
#include "worker/model/gpt.h"

namespace ddp::model {
namespace {

GptConfig tiny() {
  GptConfig c;
  c.vocabSize = 11;
  c.contextLength = 5;
  c.layers = 2;
  c.heads = 2;
  c.dModel = 8;
  c.mlpHidden = 12;
  return c;
}

std::unique_ptr<Gpt> make(const GptConfig& c, uint64_t seed = 7) {
  auto g = Gpt::create(c, kernels::makeCpuLayerOps(1), seed);
  EXPECT_TRUE(g.isOk()) << g.status();
  return g.isOk() ? std::move(*g) : nullptr;
}

struct Data {
  std::vector<int32_t> tokens, classes;
  Batch batch(int size, int t) const { return Batch{size, t, nullptr, tokens.data(), classes.data(), nullptr}; }
};

// `size` windows of a sequence: tokens[i] = seq[i], classes[i] = seq[i + 1].
Data windows(int size, int t, int vocab, uint64_t salt) {
  Data d;
  for (int s = 0; s < size; ++s) {
    for (int i = 0; i <= t; ++i) {
      const int32_t tok = static_cast<int32_t>((s * 7 + i * 3 + salt) % static_cast<uint64_t>(vocab));
      if (i < t) d.tokens.push_back(tok);
      if (i > 0) d.classes.push_back(tok);
    }
  }
  return d;
}

double meanLoss(Gpt& g, const Batch& b) {
  auto s = g.evaluate(b);
  EXPECT_TRUE(s.isOk()) << s.status();
  return s.isOk() ? s->meanLoss() : 0;
}

void expectGradientsMatchFiniteDifferences(const GptConfig& c) {
  auto g = make(c);
  ASSERT_NE(g, nullptr);
  const Data d = windows(2, c.contextLength, c.vocabSize, 1);
  const Batch b = d.batch(2, c.contextLength);
  g->zeroGrad();
  ASSERT_TRUE(g->forwardBackward(b).isOk());
  for (Parameter* p : g->parameters()) {
    auto* w = static_cast<float*>(p->data);
    const auto* grad = static_cast<const float*>(p->grad);
    const size_t n = p->numel();
    for (size_t k = 0; k < std::min<size_t>(n, 8); ++k) {
      const size_t i = (k * 7919 + 3) % n;
      const float saved = w[i];
      const float eps = 2e-3f;
      w[i] = saved + eps;
      const double up = meanLoss(*g, b);
      w[i] = saved - eps;
      const double down = meanLoss(*g, b);
      w[i] = saved;
      const double fd = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grad[i], fd, 2e-3 + 0.05 * std::fabs(fd)) << p->name << "[" << i << "]";
    }
  }
}

TEST(GptTest, GradientsMatchFiniteDifferencesInEveryVariant) {
  GptConfig c = tiny();
  {
    SCOPED_TRACE("layernorm, learned positions, tied");
    expectGradientsMatchFiniteDifferences(c);
  }
  c.norm = GptNormKind::kRmsNorm;
  c.rope = true;
  c.tiedEmbeddings = false;
  {
    SCOPED_TRACE("rmsnorm, rope, untied");
    expectGradientsMatchFiniteDifferences(c);
  }
}

TEST(GptTest, EveryParameterIsReadyOnceInDescendingOrder) {
  for (bool tied : {true, false}) {
    GptConfig c = tiny();
    c.tiedEmbeddings = tied;
    auto g = make(c);
    ASSERT_NE(g, nullptr);
    const Data d = windows(3, c.contextLength, c.vocabSize, 2);
    std::vector<size_t> order;
    ASSERT_TRUE(g->forwardBackward(d.batch(3, c.contextLength), [&](size_t i) { order.push_back(i); }).isOk());
    ASSERT_EQ(order.size(), g->parameters().size()) << (tied ? "tied" : "untied");
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], order.size() - 1 - i);
  }
}

TEST(GptTest, InitIsGpt2LikeAndBitwiseDeterministic) {
  const GptConfig c = tiny();
  auto a = make(c, 3), b = make(c, 3), other = make(c, 4);
  ASSERT_TRUE(a && b && other);
  const Data d = windows(4, c.contextLength, c.vocabSize, 5);
  const double loss = meanLoss(*a, d.batch(4, c.contextLength));
  EXPECT_NEAR(loss, std::log(static_cast<double>(c.vocabSize)), 0.1) << "a near-uniform guess at init";
  EXPECT_EQ(loss, meanLoss(*b, d.batch(4, c.contextLength)));
  bool differs = false;
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    const Parameter* p = a->parameters()[i];
    EXPECT_EQ(std::memcmp(p->data, b->parameters()[i]->data, p->bytes()), 0) << p->name;
    differs = differs || std::memcmp(p->data, other->parameters()[i]->data, p->bytes()) != 0;
  }
  EXPECT_TRUE(differs) << "another seed, other parameters";
  // Residual projections are scaled down by 1/sqrt(2 layers) against the other weights.
  EXPECT_EQ(a->parameters()[0]->name, "embed.tokens");
  EXPECT_EQ(a->numParameters(), 11u * 8 + 5 * 8 + 2 * (2 * 8 + 24 * 8 + 24 + 64 + 8 + 2 * 8 + 12 * 8 + 12 + 8 * 12 + 8) + 16);
}

TEST(GptTest, LearnsARepeatingSequence) {
  const GptConfig c = tiny();
  auto g = make(c);
  ASSERT_NE(g, nullptr);
  const Data d = windows(8, c.contextLength, c.vocabSize, 0);
  const Batch b = d.batch(8, c.contextLength);
  const double start = meanLoss(*g, b);
  for (int step = 0; step < 150; ++step) {
    g->zeroGrad();
    ASSERT_TRUE(g->forwardBackward(b).isOk());
    for (Parameter* p : g->parameters()) {
      auto* w = static_cast<float*>(p->data);
      const auto* grad = static_cast<const float*>(p->grad);
      for (size_t i = 0; i < p->numel(); ++i) w[i] -= 0.5f * grad[i];
    }
  }
  const double end = meanLoss(*g, b);
  EXPECT_LT(end, 0.25 * start) << "from " << start << " to " << end;
}

TEST(GptTest, DropoutIsDeterministicFromItsSeedAndOffInEvaluation) {
  GptConfig c = tiny();
  c.dropout = 0.3f;
  auto g = make(c);
  ASSERT_NE(g, nullptr);
  const Data d = windows(2, c.contextLength, c.vocabSize, 9);
  const Batch b = d.batch(2, c.contextLength);
  auto loss = [&](uint64_t seed) {
    g->zeroGrad();
    auto s = g->forwardBackward(b, {}, 1.f, seed);
    EXPECT_TRUE(s.isOk());
    return s.isOk() ? s->lossSum : 0.0;
  };
  EXPECT_EQ(loss(5), loss(5));
  EXPECT_NE(loss(5), loss(6));
  GptConfig noDrop = tiny();
  auto plain = make(noDrop);
  EXPECT_EQ(meanLoss(*g, b), meanLoss(*plain, b)) << "same init, no dropout in evaluation";
}

TEST(GptTest, RefusesATokenOutsideTheVocabularyNamingIt) {
  const GptConfig c = tiny();
  auto g = make(c);
  ASSERT_NE(g, nullptr);
  Data d = windows(2, c.contextLength, c.vocabSize, 0);
  d.tokens[7] = 11;
  auto s = g->evaluate(d.batch(2, c.contextLength));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("token 11 at sample 1, position 2"), std::string::npos) << s.status();
  GptConfig bad = tiny();
  bad.dModel = 9;
  auto refused = Gpt::create(bad, kernels::makeCpuLayerOps(1), 0);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("spec.model.dModel"), std::string::npos);
}

}  // namespace
}  // namespace ddp::model
