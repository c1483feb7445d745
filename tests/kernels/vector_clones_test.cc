// Note [Vector clones] (kernels/cpu_vector_math.h): the AVX2 / AVX-512 clones of the elementwise
// ops give the bits of the baseline (SSE2) code. Oracle: the ops' formulas written out here as
// plain scalar loops, compiled for baseline x86-64 like every test (no FMA), and compared bit for
// bit with what the dispatched clone (on this CPU: its widest) computes, on odd lengths so that
// vector bodies and scalar tails both run. A clone that fused a multiply-add, or summed in
// another order, fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/cpu_vector_math.h"
#include "kernels/layer_ops.h"
#include "kernels/optim_ops.h"
#include "kernels/transformer_ops.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed, float scale) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * r.normal();
  return v;
}

void expectSameBits(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " index " << i << ": " << got[i] << " vs " << want[i];
  }
}

// Note [Tanh GELU] in kernels/layer_ops.cc.
float sigmoidOf2u(float x) {
  const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 1.f / (1.f + cpu::expApprox(-2.f * u));
}

TEST(VectorClonesTest, GeluTanhForwardAndBackwardKeepTheScalarBits) {
  const size_t n = 4099;
  const auto x = rnd(n, 1, 3.f), dy = rnd(n, 2, 1.f);
  std::vector<float> y(n), dx(n), wantY(n), wantDx(n);
  cpu::activationForward(Activation::kGeluTanh, x.data(), y.data(), n);
  cpu::activationBackward(Activation::kGeluTanh, x.data(), y.data(), dy.data(), dx.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float s = sigmoidOf2u(x[i]);
    wantY[i] = x[i] * s;
    const float du = 0.79788456080286536f * (1.f + 3.f * 0.044715f * x[i] * x[i]);
    wantDx[i] = dy[i] * (s + 2.f * x[i] * s * (1.f - s) * du);
  }
  expectSameBits(y, wantY, "gelu forward");
  expectSameBits(dx, wantDx, "gelu backward");
}

// Sum of (x - c)^2 in 8 partial sums, as transformer_ops.cc's.
float centeredSquares8(const float* x, float c, int64_t n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) part[k] += (x[i + k] - c) * (x[i + k] - c);
  }
  float s = 0.f;
  for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  for (int k = 0; k < 8; ++k) s += part[k];
  return s;
}

TEST(VectorClonesTest, LayerNormForwardKeepsTheScalarBits) {
  const int rows = 7, dim = 133;
  const auto x = rnd(size_t{rows} * dim, 3, 2.f), g = rnd(dim, 4, 1.f), b = rnd(dim, 5, 1.f);
  std::vector<float> y(x.size()), mean(rows), rstd(rows), want(x.size());
  cpu::layerNormForward(x.data(), g.data(), b.data(), rows, dim, 1e-5f, y.data(), mean.data(), rstd.data());
  for (int r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * dim;
    const float mu = cpu::sum8(xr, dim) / static_cast<float>(dim);
    const float rs = 1.f / std::sqrt(centeredSquares8(xr, mu, dim) / static_cast<float>(dim) + 1e-5f);
    for (int c = 0; c < dim; ++c) want[size_t(r) * dim + c] = (xr[c] - mu) * rs * g[c] + b[c];
  }
  expectSameBits(y, want, "layernorm forward");
}

TEST(VectorClonesTest, CrossEntropyKeepsTheScalarBits) {
  const int rows = 5, classes = 257;
  auto logits = rnd(size_t{rows} * classes, 6, 4.f);
  const std::vector<int32_t> labels = {0, 17, 256, 128, 3};
  std::vector<float> want = logits, loss(rows), wantLoss(rows);
  std::vector<int32_t> correct(rows);
  cpu::crossEntropyInPlace(logits.data(), labels.data(), rows, classes, 0.25f, loss.data(), correct.data());
  for (int r = 0; r < rows; ++r) {
    float* z = want.data() + size_t(r) * classes;
    float part[8];
    std::fill(part, part + 8, -std::numeric_limits<float>::infinity());
    int c = 0;
    for (; c + 8 <= classes; c += 8) {
      for (int k = 0; k < 8; ++k) part[k] = z[c + k] > part[k] ? z[c + k] : part[k];
    }
    float mx = -std::numeric_limits<float>::infinity();
    for (; c < classes; ++c) mx = z[c] > mx ? z[c] : mx;
    for (int k = 0; k < 8; ++k) mx = part[k] > mx ? part[k] : mx;
    const float zLabel = z[labels[r]];
    for (c = 0; c < classes; ++c) z[c] = cpu::expApprox(z[c] - mx);
    const float sum = cpu::sum8(z, classes);
    wantLoss[r] = (mx - zLabel) + std::log(sum);
    const float f = 0.25f / sum;
    for (c = 0; c < classes; ++c) z[c] *= f;
    z[labels[r]] -= 0.25f;
  }
  expectSameBits(logits, want, "cross-entropy gradient");
  expectSameBits(loss, wantLoss, "cross-entropy loss");
}

TEST(VectorClonesTest, BiasGradAndResidualAddKeepTheScalarBits) {
  const int rows = 9, cols = 131;
  const auto dy = rnd(size_t{rows} * cols, 7, 1.f);
  std::vector<float> db(cols, 0.5f), want(cols, 0.5f);
  cpu::biasGrad(dy.data(), rows, cols, db.data(), /*accumulate=*/true);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) want[c] += dy[size_t(r) * cols + c];
  }
  expectSameBits(db, want, "bias grad");
  auto y = rnd(dy.size(), 8, 1.f), wantY = y;
  cpu::addInPlace(y.data(), dy.data(), y.size());
  for (size_t i = 0; i < y.size(); ++i) wantY[i] += dy[i];
  expectSameBits(y, wantY, "residual add");
}

// Note [Optimizer semantics] (kernels/optim_ops.cc): Adam and AdamW, three steps on an odd
// length, against the update written out as a scalar loop.
TEST(VectorClonesTest, AdamStepKeepsTheScalarBits) {
  for (bool decoupled : {false, true}) {
    const size_t n = 4099;
    auto p = rnd(n, 3, 1.f), m = rnd(n, 4, 0.1f), v = rnd(n, 5, 0.1f);
    for (float& x : v) x = x * x;
    auto wantP = p, wantM = m, wantV = v;
    const AdamHyper h{
        .lr = 3e-3f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weightDecay = 0.1f, .decoupled = decoupled};
    for (int64_t step = 1; step <= 3; ++step) {
      const auto g = rnd(n, 10 + step, 1.f);
      adamStepCpu({AdamTensor{p.data(), g.data(), m.data(), v.data(), n, step}}, h, 0.5f);
      const double bc1 = 1.0 - std::pow(double(0.8f), double(step)), bc2 = 1.0 - std::pow(double(0.99f), double(step));
      const float stepSize = float(3e-3f / bc1), bc2Sqrt = float(std::sqrt(bc2));
      for (size_t i = 0; i < n; ++i) {
        const float pi = wantP[i] * (decoupled ? 1.f - 3e-3f * 0.1f : 1.f);
        const float gi = g[i] * 0.5f + (decoupled ? 0.f : 0.1f) * pi;
        wantM[i] = 0.8f * wantM[i] + (1.f - 0.8f) * gi;
        wantV[i] = 0.99f * wantV[i] + (1.f - 0.99f) * gi * gi;
        wantP[i] = pi - stepSize * (wantM[i] / (std::sqrt(wantV[i]) / bc2Sqrt + 1e-6f));
      }
    }
    expectSameBits(p, wantP, decoupled ? "adamw param" : "adam param");
    expectSameBits(m, wantM, "adam first moment");
    expectSameBits(v, wantV, "adam second moment");
  }
}

// SGD with Nesterov momentum: the first step seeds the buffer, the second applies it.
TEST(VectorClonesTest, SgdStepKeepsTheScalarBits) {
  const size_t n = 4099;
  auto p = rnd(n, 6, 1.f);
  std::vector<float> buf(n, 0.f);
  auto wantP = p, wantBuf = buf;
  const SgdHyper h{.lr = 0.05f, .momentum = 0.9f, .dampening = 0.1f, .weightDecay = 0.01f, .nesterov = true};
  for (int step = 0; step < 2; ++step) {
    const auto g = rnd(n, 20 + step, 1.f);
    sgdStepCpu({SgdTensor{p.data(), g.data(), buf.data(), n, step == 0}}, h, 2.f);
    for (size_t i = 0; i < n; ++i) {
      const float d = g[i] * 2.f + 0.01f * wantP[i];
      wantBuf[i] = step == 0 ? d : 0.9f * wantBuf[i] + (1.f - 0.1f) * d;
      wantP[i] -= 0.05f * (d + 0.9f * wantBuf[i]);
    }
  }
  expectSameBits(p, wantP, "sgd param");
  expectSameBits(buf, wantBuf, "sgd momentum");
}

}  // namespace
}  // namespace ddp::kernels
