// The CPU twins of the declared stacks' ops (kernels/sequential_ops.cc, the sigmoid in
// layer_ops.cc): average pooling against a direct sum and its backward against finite
// differences, the sigmoid's derivative, the mean squared error in closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.normal();
  return v;
}

ConvGeometry pool(int batch, int c, int h, int w, int k, int stride) {
  ConvGeometry g;
  g.batch = batch;
  g.channels = c;
  g.height = h;
  g.width = w;
  g.kernelH = g.kernelW = k;
  g.stride = stride;
  return g;
}

TEST(SequentialOpsTest, AvgPoolIsTheWindowMeanAndItsBackwardTheTranspose) {
  for (auto [k, stride] : {std::pair{2, 2}, std::pair{3, 1}, std::pair{3, 2}}) {
    SCOPED_TRACE("kernel " + std::to_string(k) + " stride " + std::to_string(stride));
    const ConvGeometry g = pool(2, 3, 7, 5, k, stride);
    const int oh = g.outHeight(), ow = g.outWidth();
    const auto x = rnd(2 * 3 * 7 * 5, 1);
    std::vector<float> y(2 * 3 * oh * ow);
    cpu::avgPoolForward(g, x.data(), y.data());
    for (int pl = 0; pl < 6; ++pl) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          double s = 0;
          for (int i = 0; i < k; ++i) {
            for (int j = 0; j < k; ++j) s += x[pl * 35 + (oy * stride + i) * 5 + ox * stride + j];
          }
          EXPECT_NEAR(y[(pl * oh + oy) * ow + ox], s / (k * k), 1e-5);
        }
      }
    }
    // <dy, pool(x)> is linear in x: its gradient is avgPoolBackward(dy), checked entry by entry.
    const auto dy = rnd(y.size(), 2);
    std::vector<float> dx(x.size());
    cpu::avgPoolBackward(g, dy.data(), dx.data());
    for (size_t i = 0; i < x.size(); i += 7) {
      std::vector<float> e(x.size(), 0.f), ye(y.size());
      e[i] = 1.f;
      cpu::avgPoolForward(g, e.data(), ye.data());
      double want = 0;
      for (size_t o = 0; o < y.size(); ++o) want += double(dy[o]) * ye[o];
      EXPECT_NEAR(dx[i], want, 1e-5) << i;
    }
  }
}

TEST(SequentialOpsTest, SigmoidAndItsDerivative) {
  const auto x = rnd(50, 3);
  const auto dy = rnd(50, 4);
  std::vector<float> y(50), dx(50);
  cpu::activationForward(Activation::kSigmoid, x.data(), y.data(), 50);
  cpu::activationBackward(Activation::kSigmoid, x.data(), y.data(), dy.data(), dx.data(), 50);
  for (int i = 0; i < 50; ++i) {
    const double s = 1 / (1 + std::exp(-double(x[i])));
    EXPECT_NEAR(y[i], s, 1e-6);
    const double h = 1e-3;
    const double fd = (1 / (1 + std::exp(-(x[i] + h))) - 1 / (1 + std::exp(-(x[i] - h)))) / (2 * h);
    EXPECT_NEAR(dx[i], dy[i] * fd, 1e-5);
  }
  Activation a;
  ASSERT_TRUE(parseActivation("sigmoid", &a));
  EXPECT_EQ(a, Activation::kSigmoid);
}

TEST(SequentialOpsTest, MeanSquaredErrorPerRowAndItsGradient) {
  const int rows = 3, cols = 4;
  const auto p = rnd(rows * cols, 5), t = rnd(rows * cols, 6);
  std::vector<float> loss(rows), d(rows * cols);
  cpu::meanSquaredError(p.data(), t.data(), rows, cols, 0.5f, loss.data(), d.data());
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < cols; ++c) {
      const double e = double(p[r * cols + c]) - t[r * cols + c];
      s += e * e;
      EXPECT_NEAR(d[r * cols + c], 0.5 * 2 * e / cols, 1e-6);
    }
    EXPECT_NEAR(loss[r], s / cols, 1e-5);
  }
  std::vector<float> lossOnly(rows);
  cpu::meanSquaredError(p.data(), t.data(), rows, cols, 0.5f, lossOnly.data(), nullptr);
  EXPECT_EQ(lossOnly, loss);
}

}  // namespace
}  // namespace ddp::kernels
