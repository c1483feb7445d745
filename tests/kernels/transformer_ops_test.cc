// CPU transformer ops (kernels/transformer_ops.h) against the double references of
// transformer_reference.h on small odd shapes: forwards against the reference, every backward
// against central differences of the reference forward, plus the properties the model relies
// on (causality, RoPE's transpose, ignored labels, dropout's mask) and the LayerOps face.
#include "kernels/transformer_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/cpu_vector_math.h"
#include "tests/kernels/transformer_reference.h"

namespace ddp::kernels {
namespace {

namespace ref = reference;
using ref::Vec;

std::vector<float> rnd(size_t n, uint64_t seed, float scale = 1.f) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * r.normal();
  return v;
}

// |got - want| <= tol * (1 + |want|) element by element.
template <typename A, typename B>
void expectClose(const A& got, const B& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(double(want[i])))) << what << " index " << i;
  }
}

// Shapes: odd everywhere (rows 5 x dim 7, seq 5, heads 3, headDim 6, vocab 11).
constexpr int kBatch = 2, kSeq = 5, kHeads = 3, kHeadDim = 6, kDim = 7, kVocab = 11;
constexpr int kRows = kBatch * kSeq;
constexpr int kQkv = kRows * 3 * kHeads * kHeadDim;

TEST(TransformerOpsTest, ExpApproxIsWithinTwoUlpOfExp) {
  double worst = 0;
  for (float x = -87.f; x <= 88.f; x += 0.0137f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(cpu::expApprox(x) - want) / want);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(cpu::expApprox(0.f), 1.f);
  EXPECT_LT(cpu::expApprox(-1000.f), 1e-37f);
}

TEST(TransformerOpsTest, GeluTanhMatchesClosedFormAndItsDerivative) {
  Activation parsed = Activation::kIdentity;
  EXPECT_TRUE(parseActivation("gelu_tanh", &parsed));
  EXPECT_EQ(parsed, Activation::kGeluTanh);
  EXPECT_STREQ(activationName(Activation::kGeluTanh), "gelu_tanh");
  EXPECT_EQ(static_cast<int>(Activation::kGelu), 3);  // older values keep their numbers
  auto x = rnd(101, 1, 3.f);
  x[0] = 0.f, x[1] = -12.f, x[2] = 12.f, x[3] = -40.f;
  const auto dy = rnd(x.size(), 2);
  std::vector<float> y(x.size()), dx(x.size());
  cpu::activationForward(Activation::kGeluTanh, x.data(), y.data(), x.size());
  cpu::activationBackward(Activation::kGeluTanh, x.data(), y.data(), dy.data(), dx.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y[i], ref::geluTanh(x[i]), 1e-6 * (1 + std::fabs(x[i]))) << x[i];
    const double h = 1e-5;
    const double slope = (ref::geluTanh(x[i] + h) - ref::geluTanh(x[i] - h)) / (2 * h);
    EXPECT_NEAR(dx[i], dy[i] * slope, 1e-5 * (1 + std::fabs(dy[i]))) << x[i];
  }
}

TEST(TransformerOpsTest, EmbeddingForwardGathersAndBackwardAccumulatesRepeatedIds) {
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7, 3, 0};  // 3 three times, 0 twice
  const int n = static_cast<int>(ids.size());
  const auto table = rnd(kVocab * kDim, 3), dout = rnd(n * kDim, 4);
  std::vector<float> out(n * kDim, 5.f);
  cpu::embeddingForward(ids.data(), n, table.data(), kDim, out.data(), false);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < kDim; ++c) EXPECT_EQ(out[i * kDim + c], table[ids[i] * kDim + c]);
  auto acc = out;
  cpu::embeddingForward(ids.data(), n, table.data(), kDim, acc.data(), true);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(acc[i], 2 * out[i]);

  std::vector<float> dtable(kVocab * kDim, 9.f);
  cpu::embeddingBackward(ids.data(), n, dout.data(), kDim, kVocab, dtable.data(), false);
  // Central differences of L(table) = <dout, embed(table)>.
  const Vec g = ref::numericGradient(ref::toDouble(table), [&](const Vec& t) {
    double s = 0;
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < kDim; ++c) s += dout[i * kDim + c] * t[ids[i] * kDim + c];
    return s;
  });
  expectClose(dtable, g, 1e-6, "dtable");
  EXPECT_EQ(dtable[1 * kDim], 0.f);  // id 1 never appears: zeroed
  // The contract, to the bit: rows added in order i = 0..n-1, onto zeros or onto what is there.
  auto inOrder = [&](std::vector<float> t) {
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < kDim; ++c) t[ids[i] * kDim + c] += dout[i * kDim + c];
    return t;
  };
  EXPECT_EQ(dtable, inOrder(std::vector<float>(kVocab * kDim, 0.f)));
  auto twice = dtable;
  cpu::embeddingBackward(ids.data(), n, dout.data(), kDim, kVocab, twice.data(), true);
  EXPECT_EQ(twice, inOrder(dtable));
}

// LayerNorm (withMean) and RMSNorm: forward against the reference, dx / dgamma / dbeta against
// central differences of <dy, norm(x, gamma, beta)>.
void checkNorm(bool layerNorm) {
  const float eps = 1e-5f;
  auto x = rnd(kRows * kDim, 5, 2.f);
  for (int c = 0; c < kDim; ++c) x[c] += 10.f;  // a row far from zero mean
  const auto gamma = rnd(kDim, 6), beta = rnd(kDim, 7), dy = rnd(kRows * kDim, 8);
  std::vector<float> y(x.size()), mean(kRows), rstd(kRows), dx(x.size()), dgamma(kDim, 3.f),
      dbeta(kDim, 3.f);
  Vec refMean, refRstd;
  const Vec bd = ref::toDouble(beta);
  const Vec want = ref::norm(ref::toDouble(x), ref::toDouble(gamma), &bd, kRows, kDim, eps, layerNorm,
                             &refMean, &refRstd);
  if (layerNorm) {
    cpu::layerNormForward(x.data(), gamma.data(), beta.data(), kRows, kDim, eps, y.data(), mean.data(),
                          rstd.data());
    expectClose(mean, refMean, 1e-6, "mean");
    cpu::layerNormBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), kRows, kDim,
                           dx.data(), dgamma.data(), dbeta.data(), false);
  } else {
    cpu::rmsNormForward(x.data(), gamma.data(), kRows, kDim, eps, y.data(), rstd.data());
    cpu::rmsNormBackward(x.data(), gamma.data(), rstd.data(), dy.data(), kRows, kDim, dx.data(),
                         dgamma.data(), false);
  }
  Vec wantY = want;
  if (!layerNorm) {  // the reference added beta; RMSNorm has none
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kDim; ++c) wantY[r * kDim + c] -= beta[c];
  }
  expectClose(y, wantY, 2e-6, "y");
  expectClose(rstd, refRstd, 2e-6, "rstd");
  const Vec dyd = ref::toDouble(dy), xd = ref::toDouble(x), gd = ref::toDouble(gamma);
  auto loss = [&](const Vec& xv, const Vec& gv, const Vec& bv) {
    return ref::dot(dyd, ref::norm(xv, gv, layerNorm ? &bv : nullptr, kRows, kDim, eps, layerNorm));
  };
  expectClose(dx, ref::numericGradient(xd, [&](const Vec& v) { return loss(v, gd, bd); }), 2e-5, "dx");
  const Vec wantDgamma = ref::numericGradient(gd, [&](const Vec& v) { return loss(xd, v, bd); });
  expectClose(dgamma, wantDgamma, 2e-5, "dgamma");
  if (layerNorm) {
    expectClose(dbeta, ref::numericGradient(bd, [&](const Vec& v) { return loss(xd, gd, v); }), 2e-5,
                "dbeta");
  }
  // accumulateParams adds onto what is there.
  std::vector<float> dgamma2(kDim, 1.f), dbeta2(kDim, 1.f);
  if (layerNorm) {
    cpu::layerNormBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), kRows, kDim,
                           dx.data(), dgamma2.data(), dbeta2.data(), true);
    for (int c = 0; c < kDim; ++c) EXPECT_NEAR(dbeta2[c], 1.f + dbeta[c], 1e-6);
  } else {
    cpu::rmsNormBackward(x.data(), gamma.data(), rstd.data(), dy.data(), kRows, kDim, dx.data(),
                         dgamma2.data(), true);
  }
  for (int c = 0; c < kDim; ++c) EXPECT_NEAR(dgamma2[c], 1.f + dgamma[c], 1e-6);
}

TEST(TransformerOpsTest, LayerNormMatchesReferenceAndFiniteDifferences) { checkNorm(true); }
TEST(TransformerOpsTest, RmsNormMatchesReferenceAndFiniteDifferences) { checkNorm(false); }

// Attention of `batch x seq` tokens: forward against the reference (out and probs), backward
// against central differences of <dout, attention(qkv)> on all of qkv, or on `samples` entries.
void checkAttention(int batch, int seq, int heads, int hd, int samples) {
  SCOPED_TRACE(::testing::Message() << "batch " << batch << " seq " << seq << " heads " << heads);
  const size_t n = size_t(batch) * seq * 3 * heads * hd;
  const auto qkv = rnd(n, 9), dout = rnd(size_t(batch) * seq * heads * hd, 10);
  std::vector<float> out(dout.size()), probs(size_t(batch) * heads * seq * seq, -1.f), dqkv(n, 7.f);
  cpu::causalAttentionForward(qkv.data(), batch, seq, heads, hd, out.data(), probs.data());
  Vec refProbs;
  const Vec qd = ref::toDouble(qkv);
  expectClose(out, ref::attention(qd, batch, seq, heads, hd, &refProbs), 2e-6, "out");
  expectClose(probs, refProbs, 2e-6, "probs");
  for (int bh = 0; bh < batch * heads; ++bh)
    for (int i = 0; i < seq; ++i)
      for (int j = i + 1; j < seq; ++j) ASSERT_EQ(probs[(size_t(bh) * seq + i) * seq + j], 0.f);
  cpu::causalAttentionBackward(qkv.data(), probs.data(), dout.data(), batch, seq, heads, hd, dqkv.data());
  const Vec dd = ref::toDouble(dout);
  auto loss = [&](const Vec& v) { return ref::dot(dd, ref::attention(v, batch, seq, heads, hd)); };
  if (samples == 0) {
    expectClose(dqkv, ref::numericGradient(qd, loss), 2e-5, "dqkv");
    return;
  }
  SplitMixRng pick(11);
  Vec x = qd;
  for (int s = 0; s < samples; ++s) {
    const size_t i = pick.below(n);
    const double h = 1e-5, keep = x[i];
    x[i] = keep + h;
    const double up = loss(x);
    x[i] = keep - h;
    const double down = loss(x);
    x[i] = keep;
    const double want = (up - down) / (2 * h);
    ASSERT_NEAR(dqkv[i], want, 5e-5 * (1 + std::fabs(want))) << "index " << i;
  }
}

TEST(TransformerOpsTest, CausalAttentionMatchesReferenceAndFiniteDifferences) {
  checkAttention(kBatch, kSeq, kHeads, kHeadDim, 0);
  checkAttention(1, 1, 1, 3, 0);
  // Longer than one row block (Note [CPU causal attention]): blocks 0-63, 64-127, 128-130.
  checkAttention(2, 2 * cpu::kAttentionRowBlock + 3, 2, 5, 120);
}

TEST(TransformerOpsTest, CausalAttentionIgnoresFutureTokens) {
  for (int seq : {kSeq, cpu::kAttentionRowBlock + 9}) {
    const int width = 3 * kHeads * kHeadDim, t = seq - 3;  // token t of batch 0 changes
    auto qkv = rnd(size_t(kBatch) * seq * width, 12);
    std::vector<float> out(size_t(kBatch) * seq * kHeads * kHeadDim), probs(size_t(kBatch) * kHeads * seq * seq);
    cpu::causalAttentionForward(qkv.data(), kBatch, seq, kHeads, kHeadDim, out.data(), probs.data());
    for (int c = kHeads * kHeadDim; c < width; ++c) qkv[size_t(t) * width + c] += 3.f;  // its k and v
    auto out2 = out, probs2 = probs;
    cpu::causalAttentionForward(qkv.data(), kBatch, seq, kHeads, kHeadDim, out2.data(), probs2.data());
    const int hd = kHeads * kHeadDim;
    for (int i = 0; i < kBatch * seq; ++i) {
      const bool affected = i < seq && i >= t;
      const std::vector<float> a(out.begin() + i * hd, out.begin() + (i + 1) * hd);
      const std::vector<float> b(out2.begin() + i * hd, out2.begin() + (i + 1) * hd);
      if (affected) {
        EXPECT_NE(a, b) << "row " << i;
      } else {
        EXPECT_EQ(a, b) << "row " << i;
      }
    }
  }
}

TEST(TransformerOpsTest, RopeRotatesQkAndItsBackwardIsTheTranspose) {
  const float base = 10000.f;
  const auto x = rnd(kQkv, 13), y = rnd(kQkv, 14);
  auto fx = x;
  cpu::ropeForward(fx.data(), kBatch, kSeq, kHeads, kHeadDim, base);
  expectClose(fx, ref::rope(ref::toDouble(x), kBatch, kSeq, kHeads, kHeadDim, base, 1), 1e-6, "rope");
  const int width = 3 * kHeads * kHeadDim;
  for (int r = 0; r < kRows; ++r) {  // v untouched, position 0 untouched
    for (int c = 0; c < width; ++c) {
      if (c >= 2 * kHeads * kHeadDim || r % kSeq == 0) {
        ASSERT_EQ(fx[r * width + c], x[r * width + c]);
      }
    }
  }
  // <rope(x), y> == <x, ropeBackward(y)>
  auto by = y;
  cpu::ropeBackward(by.data(), kBatch, kSeq, kHeads, kHeadDim, base);
  EXPECT_NEAR(ref::dot(ref::toDouble(fx), ref::toDouble(y)), ref::dot(ref::toDouble(x), ref::toDouble(by)), 1e-4);
  // Central differences of <y, rope(x)> give ropeBackward(y); backward undoes forward.
  const Vec g = ref::numericGradient(ref::toDouble(x), [&](const Vec& v) {
    return ref::dot(ref::toDouble(y), ref::rope(v, kBatch, kSeq, kHeads, kHeadDim, base, 1));
  });
  expectClose(by, g, 1e-6, "ropeBackward");
  cpu::ropeBackward(fx.data(), kBatch, kSeq, kHeads, kHeadDim, base);
  expectClose(fx, x, 1e-6, "round trip");
}

TEST(TransformerOpsTest, CrossEntropyMatchesReferenceAndIgnoresNegativeLabels) {
  const int rows = 5, classes = kVocab;
  auto z = rnd(rows * classes, 15, 3.f);
  z[2] = 90.f;                                               // row 0: a huge logit
  z[classes + 4] = z[classes + 6] = 50.f;                    // row 1: tie -> the first index
  const std::vector<int32_t> labels = {2, 4, -1, 9, 0};
  const float scale = 0.3f;
  auto d = z;
  std::vector<float> loss(rows, -1.f);
  std::vector<int32_t> correct(rows, -1);
  cpu::crossEntropyInPlace(d.data(), labels.data(), rows, classes, scale, loss.data(), correct.data());
  const Vec zd = ref::toDouble(z);
  expectClose(loss, ref::crossEntropy(zd, labels, rows, classes), 1e-6, "loss");
  EXPECT_EQ(correct[0], 1);
  EXPECT_EQ(correct[1], 1);
  EXPECT_EQ(correct[2], 0);
  for (int c = 0; c < classes; ++c) EXPECT_EQ(d[2 * classes + c], 0.f);  // ignored row
  EXPECT_EQ(loss[2], 0.f);
  for (int r : {3, 4}) {
    int arg = 0;
    for (int c = 1; c < classes; ++c)
      if (z[r * classes + c] > z[r * classes + arg]) arg = c;
    EXPECT_EQ(correct[r], arg == labels[r] ? 1 : 0);
  }
  const Vec g = ref::numericGradient(zd, [&](const Vec& v) {
    const Vec l = ref::crossEntropy(v, labels, rows, classes);
    double s = 0;
    for (double x : l) s += scale * x;
    return s;
  });
  expectClose(d, g, 1e-6, "dlogits");
}

TEST(TransformerOpsTest, DropoutUniformIsPinned) {
  // Note [Dropout mask], evaluated independently (Python integers): top 24 bits of
  // f(f(seed) + (i + 1) * 0x9e3779b97f4a7c15), f the SplitMix64 finalizer. A change here changes
  // every mask, so resumed runs would no longer reproduce.
  const struct { uint64_t seed, i; uint32_t bits; } pins[] = {
      {0, 0, 14819496}, {0, 1, 7239838}, {0, 2, 443485}, {0, 1000000, 13506518},
      {42, 0, 10001215}, {42, 1, 2690484}, {42, 2, 2791691}, {42, 1000000, 16432850}};
  for (const auto& p : pins) EXPECT_EQ(dropoutUniform(p.seed, p.i), p.bits / 16777216.f) << p.seed << " " << p.i;
}

TEST(TransformerOpsTest, DropoutMaskIsCounterBasedAndBackwardMatches) {
  const size_t n = 100003;
  const float p = 0.3f;
  const auto x = rnd(n, 16), dy = rnd(n, 17);
  std::vector<float> y(n), y2(n), y3(n), dx(n);
  cpu::dropoutForward(x.data(), y.data(), n, p, 42);
  cpu::dropoutForward(x.data(), y2.data(), n, p, 42);
  cpu::dropoutForward(x.data(), y3.data(), n, p, 43);
  EXPECT_EQ(y, y2);
  EXPECT_NE(y, y3);
  cpu::dropoutBackward(dy.data(), dx.data(), n, p, 42);
  const float scale = 1.f / (1.f - p);
  size_t kept = 0, differ = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool keep = dropoutUniform(42, i) >= p;
    kept += keep;
    differ += keep != (dropoutUniform(43, i) >= p);
    ASSERT_EQ(y[i], keep ? x[i] * scale : 0.f) << i;
    ASSERT_EQ(dx[i], keep ? dy[i] * scale : 0.f) << i;
  }
  // Binomial(n, 0.7): standard deviation about 145.
  EXPECT_NEAR(double(kept) / n, 1 - p, 0.01);
  EXPECT_NEAR(double(differ) / n, 2 * p * (1 - p), 0.01);  // another seed: an independent mask
  // In place, p = 0 (copy) and p = 1 (all dropped).
  auto inPlace = x;
  cpu::dropoutForward(inPlace.data(), inPlace.data(), n, p, 42);
  EXPECT_EQ(inPlace, y);
  cpu::dropoutForward(x.data(), y.data(), n, 0.f, 42);
  EXPECT_EQ(y, x);
  cpu::dropoutForward(x.data(), y.data(), n, 1.f, 42);
  EXPECT_EQ(y, std::vector<float>(n, 0.f));
}

TEST(TransformerOpsTest, AddInPlaceAndLayerOpsForwardToTheFreeFunctions) {
  auto ops = makeCpuLayerOps(1);
  const auto x = rnd(kQkv, 18), x2 = rnd(kQkv, 19);
  auto a = x, b = x;
  cpu::addInPlace(a.data(), x2.data(), a.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], x[i] + x2[i]);
  ops->addInPlace(b.data(), x2.data(), b.size());
  EXPECT_EQ(a, b);
  // Attention + RoPE
  std::vector<float> out1(kRows * kHeads * kHeadDim), out2 = out1, p1(kBatch * kHeads * kSeq * kSeq), p2 = p1;
  std::vector<float> d1(kQkv), d2(kQkv);
  cpu::causalAttentionForward(x.data(), kBatch, kSeq, kHeads, kHeadDim, out1.data(), p1.data());
  ops->causalAttentionForward(x.data(), kBatch, kSeq, kHeads, kHeadDim, out2.data(), p2.data());
  EXPECT_EQ(out1, out2);
  EXPECT_EQ(p1, p2);
  cpu::causalAttentionBackward(x.data(), p1.data(), out1.data(), kBatch, kSeq, kHeads, kHeadDim, d1.data());
  ops->causalAttentionBackward(x.data(), p2.data(), out2.data(), kBatch, kSeq, kHeads, kHeadDim, d2.data());
  EXPECT_EQ(d1, d2);
  auto r1 = x, r2 = x;
  cpu::ropeForward(r1.data(), kBatch, kSeq, kHeads, kHeadDim, 500.f);
  ops->ropeForward(r2.data(), kBatch, kSeq, kHeads, kHeadDim, 500.f);
  EXPECT_EQ(r1, r2);
  cpu::ropeBackward(r1.data(), kBatch, kSeq, kHeads, kHeadDim, 500.f);
  ops->ropeBackward(r2.data(), kBatch, kSeq, kHeads, kHeadDim, 500.f);
  EXPECT_EQ(r1, r2);
  // Norms
  const auto g = rnd(kDim, 20), be = rnd(kDim, 21);
  std::vector<float> y1(kRows * kDim), y2 = y1, m1(kRows), m2(kRows), s1(kRows), s2(kRows);
  std::vector<float> dx1(kRows * kDim), dx2 = dx1, dg1(kDim), dg2(kDim), db1(kDim), db2(kDim);
  cpu::layerNormForward(x.data(), g.data(), be.data(), kRows, kDim, 1e-5f, y1.data(), m1.data(), s1.data());
  ops->layerNormForward(x.data(), g.data(), be.data(), kRows, kDim, 1e-5f, y2.data(), m2.data(), s2.data());
  EXPECT_EQ(y1, y2);
  cpu::layerNormBackward(x.data(), g.data(), m1.data(), s1.data(), x2.data(), kRows, kDim, dx1.data(), dg1.data(),
                         db1.data(), false);
  ops->layerNormBackward(x.data(), g.data(), m2.data(), s2.data(), x2.data(), kRows, kDim, dx2.data(), dg2.data(),
                         db2.data(), false);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(dg1, dg2);
  EXPECT_EQ(db1, db2);
  cpu::rmsNormForward(x.data(), g.data(), kRows, kDim, 1e-5f, y1.data(), s1.data());
  ops->rmsNormForward(x.data(), g.data(), kRows, kDim, 1e-5f, y2.data(), s2.data());
  EXPECT_EQ(y1, y2);
  cpu::rmsNormBackward(x.data(), g.data(), s1.data(), x2.data(), kRows, kDim, dx1.data(), dg1.data(), true);
  ops->rmsNormBackward(x.data(), g.data(), s2.data(), x2.data(), kRows, kDim, dx2.data(), dg2.data(), true);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(dg1, dg2);
  // Embedding, cross-entropy, dropout
  const std::vector<int32_t> ids = {1, 10, 1, 4, 0}, labels = {3, -1, 10, 0, 1};
  std::vector<float> e1(5 * kDim), e2(5 * kDim), t1(kVocab * kDim), t2(kVocab * kDim);
  cpu::embeddingForward(ids.data(), 5, x.data(), kDim, e1.data(), false);
  ops->embeddingForward(ids.data(), 5, x.data(), kDim, e2.data(), false);
  EXPECT_EQ(e1, e2);
  cpu::embeddingBackward(ids.data(), 5, x2.data(), kDim, kVocab, t1.data(), false);
  ops->embeddingBackward(ids.data(), 5, x2.data(), kDim, kVocab, t2.data(), false);
  EXPECT_EQ(t1, t2);
  auto z1 = rnd(5 * kVocab, 22), z2 = z1;
  std::vector<float> l1(5), l2(5);
  std::vector<int32_t> c1(5), c2(5);
  cpu::crossEntropyInPlace(z1.data(), labels.data(), 5, kVocab, 0.2f, l1.data(), c1.data());
  ops->crossEntropyInPlace(z2.data(), labels.data(), 5, kVocab, 0.2f, l2.data(), c2.data());
  EXPECT_EQ(z1, z2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(c1, c2);
  std::vector<float> o1(kQkv), o2(kQkv);
  cpu::dropoutForward(x.data(), o1.data(), kQkv, 0.25f, 7);
  ops->dropoutForward(x.data(), o2.data(), kQkv, 0.25f, 7);
  EXPECT_EQ(o1, o2);
  cpu::dropoutBackward(x.data(), o1.data(), kQkv, 0.25f, 7);
  ops->dropoutBackward(x.data(), o2.data(), kQkv, 0.25f, 7);
  EXPECT_EQ(o1, o2);
  Activation a2 = Activation::kIdentity;
  ASSERT_TRUE(parseActivation("gelu_tanh", &a2));
  ops->activationForward(a2, x.data(), o2.data(), kQkv);
  cpu::activationForward(Activation::kGeluTanh, x.data(), o1.data(), kQkv);
  EXPECT_EQ(o1, o2);
  EXPECT_TRUE(ops->status().isOk());
}

}  // namespace
}  // namespace ddp::kernels
