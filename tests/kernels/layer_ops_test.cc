// CPU layer ops against naive oracles written from the definitions: GEMM in every transpose
// combination, im2col per element, col2im as the adjoint of im2col, max-pool windows, softmax
// cross-entropy in double, activation derivatives by central differences.
#include "kernels/layer_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/split_mix_rng.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.normal();
  return v;
}

TEST(LayerOpsTest, GemmAllTransposes) {
  const int m = 5, n = 7, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      auto a = rnd(m * k, 1), b = rnd(k * n, 2), c = rnd(m * n, 3);
      auto c0 = c;
      cpu::gemm(ta, tb, m, n, k, 0.5f, a.data(), b.data(), 2.f, c.data());
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double s = 0;
          for (int p = 0; p < k; ++p) {
            double av = ta ? a[p * m + i] : a[i * k + p];
            double bv = tb ? b[j * k + p] : b[p * n + j];
            s += av * bv;
          }
          EXPECT_NEAR(c[i * n + j], 0.5 * s + 2.0 * c0[i * n + j], 1e-4) << ta << tb;
        }
    }
  }
  // k == 0: C = beta * C.
  std::vector<float> c(4, 3.f);
  cpu::gemm(false, false, 2, 2, 0, 1.f, nullptr, nullptr, 0.f, c.data());
  EXPECT_EQ(c, std::vector<float>(4, 0.f));
}

class Im2colTest : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(Im2colTest, MatchesDefinitionAndCol2imIsItsAdjoint) {
  auto [kh, kw, stride, pad] = GetParam();
  ConvGeometry g{.batch = 2, .channels = 3, .height = 6, .width = 7, .kernelH = kh,
                 .kernelW = kw, .stride = stride, .pad = pad};
  const int oh = g.outHeight(), ow = g.outWidth();
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  auto img = rnd(2 * 3 * 6 * 7, 4);
  std::vector<float> col(g.colRows() * g.colCols(), -99.f);
  cpu::im2col(g, img.data(), col.data());
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j)
        for (int n = 0; n < 2; ++n)
          for (int oy = 0; oy < oh; ++oy)
            for (int ox = 0; ox < ow; ++ox) {
              int iy = oy * stride - pad + i, ix = ox * stride - pad + j;
              float want = (iy >= 0 && iy < 6 && ix >= 0 && ix < 7) ? img[((n * 3 + c) * 6 + iy) * 7 + ix] : 0.f;
              int64_t row = (c * kh + i) * kw + j, column = (n * oh + oy) * ow + ox;
              ASSERT_EQ(col[row * g.colCols() + column], want);
            }
  // <im2col(x), y> == <x, col2im(y)>.
  auto y = rnd(col.size(), 5);
  std::vector<float> back(img.size(), -1.f);
  cpu::col2im(g, y.data(), back.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < col.size(); ++i) lhs += double(col[i]) * y[i];
  for (size_t i = 0; i < img.size(); ++i) rhs += double(img[i]) * back[i];
  EXPECT_NEAR(lhs, rhs, 1e-3 * (1 + std::fabs(lhs)));
}

INSTANTIATE_TEST_SUITE_P(Geometries, Im2colTest,
                         ::testing::Values(std::make_tuple(3, 3, 1, 1), std::make_tuple(3, 3, 1, 0),
                                           std::make_tuple(3, 3, 2, 1), std::make_tuple(1, 1, 1, 0),
                                           std::make_tuple(5, 5, 1, 2), std::make_tuple(2, 3, 3, 2),
                                           std::make_tuple(3, 1, 2, 0), std::make_tuple(5, 3, 1, 4),
                                           // OW == W at stride 1 takes the one-copy path (Note [CPU
                                           // lowering speed]); these add whole rows of padding.
                                           std::make_tuple(7, 3, 1, 1), std::make_tuple(3, 5, 1, 2)));

// Ties (as after a ReLU: many zeros) go to the first element of the window in row-major order.
TEST(LayerOpsTest, MaxPoolMatchesWindowsForFastAndGeneralPaths) {
  for (bool ties : {false, true})
  for (auto [k, s] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 1}, std::pair{3, 3}}) {
    ConvGeometry g{.batch = 2, .channels = 2, .height = 7, .width = 8, .kernelH = k, .kernelW = k,
                   .stride = s};
    const int oh = g.outHeight(), ow = g.outWidth();
    auto x = rnd(2 * 2 * 7 * 8, 6 + k * 10 + s);
    if (ties) {
      for (float& v : x) v = std::max(0.f, std::round(v));
    }
    std::vector<float> y(2 * 2 * oh * ow);
    std::vector<int32_t> am(y.size());
    cpu::maxPoolForward(g, x.data(), y.data(), am.data());
    auto dy = rnd(y.size(), 7);
    std::vector<float> dx(x.size(), 5.f), want(x.size(), 0.f);
    cpu::maxPoolBackward(g, dy.data(), am.data(), dx.data());
    for (int pl = 0; pl < 4; ++pl)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          float best = -1e30f;
          int bi = -1;
          for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j) {
              int idx = (oy * s + i) * 8 + ox * s + j;
              if (x[pl * 56 + idx] > best) best = x[pl * 56 + idx], bi = idx;
            }
          ASSERT_EQ(y[(pl * oh + oy) * ow + ox], best) << k << " " << s;
          ASSERT_EQ(am[(pl * oh + oy) * ow + ox], bi);
          want[pl * 56 + bi] += dy[(pl * oh + oy) * ow + ox];
        }
    for (size_t i = 0; i < dx.size(); ++i) EXPECT_FLOAT_EQ(dx[i], want[i]);
  }
}

TEST(LayerOpsTest, SoftmaxCrossEntropyMatchesClosedForm) {
  const int rows = 4, classes = 5;
  auto z = rnd(rows * classes, 8);
  z[3] = 80.f;  // large logit: must not overflow
  std::vector<int32_t> labels = {0, 4, 2, 2};
  std::vector<float> p(z.size()), loss(rows), d(z.size());
  std::vector<int32_t> correct(rows);
  cpu::softmaxCrossEntropyForward(z.data(), labels.data(), rows, classes, p.data(), loss.data(), correct.data());
  cpu::softmaxCrossEntropyBackward(p.data(), labels.data(), rows, classes, 0.25f, d.data());
  for (int r = 0; r < rows; ++r) {
    double mx = -1e30, sum = 0;
    int arg = 0;
    for (int c = 0; c < classes; ++c)
      if (z[r * classes + c] > mx) mx = z[r * classes + c], arg = c;
    for (int c = 0; c < classes; ++c) sum += std::exp(double(z[r * classes + c]) - mx);
    EXPECT_NEAR(loss[r], std::log(sum) + mx - z[r * classes + labels[r]], 1e-5);
    EXPECT_EQ(correct[r], arg == labels[r] ? 1 : 0);
    for (int c = 0; c < classes; ++c) {
      double pc = std::exp(double(z[r * classes + c]) - mx) / sum;
      EXPECT_NEAR(p[r * classes + c], pc, 1e-6);
      EXPECT_NEAR(d[r * classes + c], 0.25 * (pc - (c == labels[r] ? 1 : 0)), 1e-6);
    }
  }
}

TEST(LayerOpsTest, ActivationDerivativesMatchFiniteDifferences) {
  for (Activation a : {Activation::kRelu, Activation::kTanh, Activation::kGelu, Activation::kIdentity}) {
    SCOPED_TRACE(activationName(a));
    auto x = rnd(64, 9);
    for (float& v : x) if (std::fabs(v) < 1e-2f) v = 0.5f;  // keep off the ReLU kink
    std::vector<float> y(64), dx(64), dy(64, 1.f);
    cpu::activationForward(a, x.data(), y.data(), 64);
    cpu::activationBackward(a, x.data(), y.data(), dy.data(), dx.data(), 64);
    for (int i = 0; i < 64; ++i) {
      const double h = 1e-3;
      float up = x[i] + h, down = x[i] - h, yu, yd;
      cpu::activationForward(a, &up, &yu, 1);
      cpu::activationForward(a, &down, &yd, 1);
      EXPECT_NEAR(dx[i], (double(yu) - yd) / (2 * h), 2e-3) << x[i];
    }
  }
  Activation parsed;
  EXPECT_TRUE(parseActivation("gelu", &parsed));
  EXPECT_EQ(parsed, Activation::kGelu);
  EXPECT_FALSE(parseActivation("swish", &parsed));
}

TEST(LayerOpsTest, BiasAndLayoutHelpers) {
  auto y = rnd(2 * 3 * 4, 10);
  auto y0 = y;
  std::vector<float> b = {1.f, 2.f, 3.f}, db(3, 7.f);
  cpu::channelBiasAdd(y.data(), b.data(), 2, 3, 4);
  for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(y[i], y0[i] + b[(i / 4) % 3]);
  cpu::channelBiasGrad(y0.data(), 2, 3, 4, db.data(), /*accumulate=*/false);
  for (int c = 0; c < 3; ++c) {
    double s = 0;
    for (int n = 0; n < 2; ++n) for (int p = 0; p < 4; ++p) s += y0[(n * 3 + c) * 4 + p];
    EXPECT_NEAR(db[c], s, 1e-5);
  }
  std::vector<float> t(24);
  cpu::swapLeadingDims(y0.data(), 2, 3, 4, t.data());
  for (int a = 0; a < 2; ++a)
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 4; ++p) EXPECT_EQ(t[(c * 2 + a) * 4 + p], y0[(a * 3 + c) * 4 + p]);
  std::vector<float> m = {1, 2, 3, 4, 5, 6}, bb = {10, 20, 30}, g(3, 1.f);
  cpu::biasAdd(m.data(), bb.data(), 2, 3);
  EXPECT_EQ(m, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  cpu::biasGrad(m.data(), 2, 3, g.data(), /*accumulate=*/true);
  EXPECT_EQ(g, (std::vector<float>{26, 48, 70}));
}

TEST(LayerOpsTest, CudaFactoryWithoutGpuIsAnError) {
  if (cudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present";
  auto ops = makeCudaLayerOps(0);
  EXPECT_FALSE(ops.isOk());
  auto cpuOps = makeCpuLayerOps(1);
  EXPECT_TRUE(cpuOps->device().isCpu());
  EXPECT_TRUE(cpuOps->status().isOk());
}

}  // namespace
}  // namespace ddp::kernels
