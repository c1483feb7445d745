// The GPT with bf16 matmuls (GptConfig::precision kBf16; Note [bf16 matmuls] in
// kernels/bf16_ops.h) on the CPU twin:
//  - its loss is a float64 forward pass of the same weights that rounds the same GEMM operands
//    to bf16 (an independent oracle written here from the model's definition), while the fp32
//    model matches the same oracle without rounding, and the two oracles differ by far more than
//    either tolerance;
//  - its loss stays near the fp32 model's at init and in the first steps, and it learns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/bf16_ops.h"
#include "kernels/layer_ops.h"
#include "tests/kernels/transformer_reference.h"
#include "worker/model/gpt.h"

namespace ddp::model {
namespace {

namespace ref = kernels::reference;
using Vec = ref::Vec;

GptConfig tiny(GptPrecision precision) {
  GptConfig c;
  c.vocabSize = 13;
  c.contextLength = 6;
  c.layers = 2;
  c.heads = 2;
  c.dModel = 10;
  c.mlpHidden = 14;
  c.precision = precision;
  return c;
}

std::unique_ptr<Gpt> make(const GptConfig& c) {
  auto g = Gpt::create(c, kernels::makeCpuLayerOps(1), 5);
  EXPECT_TRUE(g.isOk()) << g.status();
  return g.isOk() ? std::move(*g) : nullptr;
}

// Weights far from GPT-2's small init (N(0, 0.3), gains near 1), so that the logits are O(1)
// and bf16's rounding shows in the loss.
void randomizeWeights(Gpt& g, uint64_t seed) {
  SplitMixRng rng(seed);
  for (Parameter* p : g.parameters()) {
    auto* w = static_cast<float*>(p->data);
    const bool gain = p->name.find("norm") != std::string::npos && p->name.find(".weight") != std::string::npos;
    for (size_t i = 0; i < p->numel(); ++i) w[i] = (gain ? 1.f : 0.f) + 0.3f * rng.normal();
  }
}

struct Tokens {
  std::vector<int32_t> ids, labels;
  Batch batch(int size, int t) const { return Batch{size, t, nullptr, ids.data(), labels.data(), nullptr}; }
};

Tokens tokens(int size, int t, int vocab) {
  Tokens d;
  SplitMixRng rng(77);
  for (int i = 0; i < size * t; ++i) {
    d.ids.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab)));
    d.labels.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab)));
  }
  return d;
}

// The summed token loss of the model's definition (gpt.h, gpt_block.h: layernorm, learned
// positions, tied head, tanh GELU) in double; with `bf16`, every GEMM operand rounded to bf16.
class ReferenceGpt {
 public:
  ReferenceGpt(Gpt& g, bool bf16) : c_(g.config()), bf16_(bf16) {
    for (Parameter* p : g.parameters()) {
      const auto* d = static_cast<const float*>(p->data);
      w_[p->name] = Vec(d, d + p->numel());
    }
  }

  double lossSum(const Tokens& d, int batch) const {
    const int t = c_.contextLength, rows = batch * t, dm = c_.dModel;
    Vec x(static_cast<size_t>(rows) * dm);
    for (int r = 0; r < rows; ++r) {
      for (int k = 0; k < dm; ++k) x[r * dm + k] = w("embed.tokens")[d.ids[r] * dm + k] + w("embed.positions")[(r % t) * dm + k];
    }
    for (int l = 0; l < c_.layers; ++l) block(x, batch, "blocks." + std::to_string(l) + ".");
    const Vec xf = norm(x, "norm", rows);
    const Vec logits = linear(xf, "embed.tokens", nullptr, rows, dm, c_.vocabSize);
    double s = 0;
    for (double v : ref::crossEntropy(logits, d.labels, rows, c_.vocabSize)) s += v;
    return s;
  }

 private:
  double op(double v) const { return bf16_? kernels::roundToBf16(static_cast<float>(v)) : v; }
  const Vec& w(const std::string& name) const { return w_.at(name); }

  Vec norm(const Vec& x, const std::string& name, int rows) const {
    const Vec& bias = w(name + ".bias");
    return ref::norm(x, w(name + ".weight"), &bias, rows, c_.dModel, c_.normEps, true);
  }
  // y = op(x) op(W)^T + b, W out x in.
  Vec linear(const Vec& x, const std::string& weight, const Vec* bias, int rows, int in, int out) const {
    const Vec& wt = w(weight);
    Vec y(static_cast<size_t>(rows) * out);
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) {
        double s = bias ? (*bias)[o] : 0.0;
        for (int i = 0; i < in; ++i) s += op(x[r * in + i]) * op(wt[o * in + i]);
        y[r * out + o] = s;
      }
    }
    return y;
  }
  Vec dense(const Vec& x, const std::string& name, int rows, int in, int out) const {
    return linear(x, name + ".weight", &w(name + ".bias"), rows, in, out);
  }
  Vec attention(const Vec& qkv, int batch) const {
    const int t = c_.contextLength, heads = c_.heads, hd = c_.headDim(), width = 3 * heads * hd;
    Vec out(static_cast<size_t>(batch) * t * heads * hd, 0.0);
    for (int b = 0; b < batch; ++b) {
      for (int h = 0; h < heads; ++h) {
        for (int i = 0; i < t; ++i) {
          Vec s(i + 1);
          double mx = -1e300, sum = 0;
          for (int j = 0; j <= i; ++j) {
            double v = 0;
            for (int e = 0; e < hd; ++e) {
              v += op(qkv[(b * t + i) * width + h * hd + e]) * op(qkv[(b * t + j) * width + heads * hd + h * hd + e]);
            }
            s[j] = v / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[j]);
          }
          for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
          for (int j = 0; j <= i; ++j) {
            const double p = op(s[j] / sum);
            for (int e = 0; e < hd; ++e) {
              out[(b * t + i) * heads * hd + h * hd + e] += p * op(qkv[(b * t + j) * width + 2 * heads * hd + h * hd + e]);
            }
          }
        }
      }
    }
    return out;
  }
  void block(Vec& x, int batch, const std::string& p) const {
    const int rows = batch * c_.contextLength, dm = c_.dModel, hidden = c_.hidden();
    const Vec att = attention(dense(norm(x, p + "norm1", rows), p + "attn.qkv", rows, dm, 3 * dm), batch);
    const Vec proj = dense(att, p + "attn.proj", rows, dm, dm);
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    Vec f = dense(norm(x, p + "norm2", rows), p + "mlp.fc", rows, dm, hidden);
    for (double& v : f) v = ref::geluTanh(v);
    const Vec m = dense(f, p + "mlp.proj", rows, hidden, dm);
    for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }

  GptConfig c_;
  bool bf16_;
  std::map<std::string, Vec> w_;
};

TEST(GptBf16Test, LossIsTheFloat64ForwardOfTheRoundedOperands) {
  auto g16 = make(tiny(GptPrecision::kBf16));
  auto g32 = make(tiny(GptPrecision::kFp32));
  ASSERT_TRUE(g16 && g32);
  randomizeWeights(*g16, 3);
  randomizeWeights(*g32, 3);
  const int batch = 3;
  const Tokens d = tokens(batch, g16->config().contextLength, g16->config().vocabSize);
  auto s16 = g16->evaluate(d.batch(batch, g16->config().contextLength));
  auto s32 = g32->evaluate(d.batch(batch, g32->config().contextLength));
  ASSERT_TRUE(s16.isOk() && s32.isOk());
  const double want16 = ReferenceGpt(*g16, true).lossSum(d, batch);
  const double want32 = ReferenceGpt(*g32, false).lossSum(d, batch);
  // The model computes in fp32 what the reference computes in double: a few 1e-7 relative per
  // op, through two blocks and 18 token losses of about 3 each. Where an fp32 operand and its
  // double twin round to neighbouring bf16 values the bf16 model moves by one bf16 ulp of one
  // product, rare and inside 1e-4 of the summed loss.
  const double tol32 = 1e-5 * std::fabs(want32), tol16 = 1e-4 + 1e-5 * std::fabs(want16);
  EXPECT_NEAR(s32->lossSum, want32, tol32);
  EXPECT_NEAR(s16->lossSum, want16, tol16);
  const double roundingEffect = std::fabs(ReferenceGpt(*g16, false).lossSum(d, batch) - want16);
  EXPECT_GT(roundingEffect, 10 * tol16) << "the oracle tells bf16 from fp32 matmuls";
}

TEST(GptBf16Test, LossStaysNearTheFp32LossWhileTraining) {
  auto g16 = make(tiny(GptPrecision::kBf16));
  auto g32 = make(tiny(GptPrecision::kFp32));
  ASSERT_TRUE(g16 && g32);
  const int batch = 4, t = g16->config().contextLength;
  // A learnable rule: the next token is (2 prev + 1) mod vocab.
  Tokens d;
  for (int s = 0; s < batch; ++s) {
    int32_t tok = s;
    for (int i = 0; i < t; ++i) {
      d.ids.push_back(tok);
      tok = (2 * tok + 1) % g16->config().vocabSize;
      d.labels.push_back(tok);
    }
  }
  const Batch b = d.batch(batch, t);
  const int steps = 80;
  for (int step = 0; step <= steps; ++step) {
    auto l16 = g16->evaluate(b);
    auto l32 = g32->evaluate(b);
    ASSERT_TRUE(l16.isOk() && l32.isOk());
    // bf16 keeps 8 significant bits: a rounded operand is off by at most 2^-9 relative, a
    // product of two by about 2^-8, a logit by about that times the sum of its |terms|. At
    // GPT-2's init the logits are small and the losses agree to 1e-3; in the first steps the
    // weights part slowly (the same gradients up to that rounding). Later, SGD at this rate
    // oscillates (not contractive), so the runs are compared only where both have learned.
    if (step <= 10) {
      EXPECT_NEAR(l16->meanLoss(), l32->meanLoss(), step == 0 ? 1e-3 : 1e-2) << "step " << step;
    }
    if (step == steps) {
      EXPECT_LT(l16->meanLoss(), 0.3 * std::log(13.0)) << "the bf16 model learns the rule";
      EXPECT_LT(l32->meanLoss(), 0.3 * std::log(13.0));
      EXPECT_NEAR(l16->meanLoss(), l32->meanLoss(), 0.25 * l32->meanLoss());
      break;
    }
    for (Gpt* g : {g16.get(), g32.get()}) {
      g->zeroGrad();
      ASSERT_TRUE(g->forwardBackward(b).isOk());
      for (Parameter* p : g->parameters()) {
        auto* w = static_cast<float*>(p->data);
        const auto* grad = static_cast<const float*>(p->grad);
        for (size_t i = 0; i < p->numel(); ++i) w[i] -= 0.2f * grad[i];
      }
    }
  }
  EXPECT_NE(g16->describe().find("bf16 matmuls"), std::string::npos) << g16->describe();
  EXPECT_EQ(g32->describe().find("bf16"), std::string::npos) << g32->describe();
}

}  // namespace
}  // namespace ddp::model
