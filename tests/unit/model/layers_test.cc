// Finite-difference gradient checks of every built-in layer (parameters and input), and the
// GradReadyFn order each layer reports. Oracle: central differences of the layer's own
// forward in float, with the loss sum(y .* r) accumulated in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"
#include "worker/model/activation_layer.h"
#include "worker/model/conv2d.h"
#include "worker/model/linear.h"
#include "worker/model/max_pool2d.h"

namespace ddp::model {
namespace {

std::vector<float> randomVector(size_t n, uint64_t seed, float scale = 1.f) {
  SplitMixRng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * rng.normal();
  return v;
}

double weightedSum(const std::vector<float>& y, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}

// Compares analytic gradient g with central differences of f at up to `samples` indices of v.
template <typename F>
void expectGradientMatches(const char* what, std::vector<float>* v, float* data,
                           const std::vector<float>& g, F f, float eps = 1e-2f,
                           double tol = 2e-2) {
  const size_t n = g.size();
  double gmax = 1e-3;
  for (float x : g) gmax = std::max(gmax, std::fabs(static_cast<double>(x)));
  const size_t step = std::max<size_t>(1, n / 40);
  for (size_t i = 0; i < n; i += step) {
    float* p = data ? data + i : &(*v)[i];
    const float orig = *p;
    *p = orig + eps;
    const double up = f();
    *p = orig - eps;
    const double down = f();
    *p = orig;
    const double fd = (up - down) / (2.0 * eps);
    EXPECT_NEAR(fd, g[i], tol * gmax) << what << " index " << i;
  }
}

struct LayerCase {
  std::unique_ptr<kernels::LayerOps> ops = kernels::makeCpuLayerOps(1);
};

void checkLayer(Layer& layer, int batch, uint64_t seed, bool randomParams = true) {
  const size_t inN = batch * shapeNumel(layer.inputShape());
  const size_t outN = batch * shapeNumel(layer.outputShape());
  std::vector<Parameter*> params = layer.parameters();
  for (size_t j = 0; j < params.size() && randomParams; ++j) {
    std::vector<float> v = randomVector(params[j]->numel(), seed + 100 + j, 0.5f);
    std::copy(v.begin(), v.end(), static_cast<float*>(params[j]->data));
  }
  std::vector<float> x = randomVector(inN, seed), r = randomVector(outN, seed + 1);
  std::vector<float> y(outN), dx(inN);
  layer.reserve(batch);
  layer.forward(x.data(), y.data(), batch);
  std::vector<size_t> readyOrder;
  layer.backward(x.data(), y.data(), r.data(), dx.data(), batch,
                 [&](size_t i) { readyOrder.push_back(i); }, /*offset=*/7);
  // Ready: once per parameter, descending, offset applied.
  ASSERT_EQ(readyOrder.size(), params.size());
  for (size_t k = 0; k < readyOrder.size(); ++k) EXPECT_EQ(readyOrder[k], 7 + params.size() - 1 - k);

  auto loss = [&] {
    std::vector<float> yy(outN);
    layer.forward(x.data(), yy.data(), batch);
    return weightedSum(yy, r);
  };
  expectGradientMatches("input", &x, nullptr, dx, loss);
  for (Parameter* p : params) {
    std::vector<float> g(static_cast<float*>(p->grad), static_cast<float*>(p->grad) + p->numel());
    expectGradientMatches(p->name.c_str(), nullptr, static_cast<float*>(p->data), g, loss);
  }
}

TEST(LayersTest, LinearGradients) {
  LayerCase c;
  Linear layer(c.ops.get(), {5}, 3, "fc");
  EXPECT_EQ(layer.outputShape(), Shape{3});
  checkLayer(layer, 4, 1);
}

TEST(LayersTest, LinearTakesMultiDimInputAsFlat) {
  LayerCase c;
  Linear layer(c.ops.get(), {2, 3, 3}, 4, "fc");
  EXPECT_EQ(layer.parameters()[0]->shape, (std::vector<int64_t>{4, 18}));
  checkLayer(layer, 3, 2);
}

TEST(LayersTest, ActivationGradients) {
  for (auto a : {kernels::Activation::kRelu, kernels::Activation::kTanh,
                 kernels::Activation::kGelu, kernels::Activation::kIdentity}) {
    SCOPED_TRACE(kernels::activationName(a));
    LayerCase c;
    ActivationLayer layer(c.ops.get(), {7}, a);
    checkLayer(layer, 3, 3);
  }
}

TEST(LayersTest, Conv2dGradientsWithPaddingAndStride) {
  for (int stride : {1, 2}) {
    for (int pad : {0, 1}) {
      SCOPED_TRACE("stride " + std::to_string(stride) + " pad " + std::to_string(pad));
      LayerCase c;
      Conv2d layer(c.ops.get(), {2, 5, 6}, 3, 3, stride, pad, "conv");
      EXPECT_EQ(layer.outputShape(),
                (Shape{3, (5 + 2 * pad - 3) / stride + 1, (6 + 2 * pad - 3) / stride + 1}));
      checkLayer(layer, 2, 4 + stride * 10 + pad);
    }
  }
}

TEST(LayersTest, Conv2dMatchesDirectConvolution) {
  LayerCase c;
  Conv2d layer(c.ops.get(), {2, 4, 4}, 3, 3, 1, 1, "conv");
  std::vector<float> w = randomVector(3 * 2 * 9, 5), b = randomVector(3, 6);
  std::copy(w.begin(), w.end(), static_cast<float*>(layer.parameters()[0]->data));
  std::copy(b.begin(), b.end(), static_cast<float*>(layer.parameters()[1]->data));
  const int batch = 2;
  std::vector<float> x = randomVector(batch * 2 * 16, 7), y(batch * 3 * 16);
  layer.forward(x.data(), y.data(), batch);
  for (int n = 0; n < batch; ++n)
    for (int o = 0; o < 3; ++o)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = b[o];
          for (int ci = 0; ci < 2; ++ci)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                int yy = i + ki - 1, xx = j + kj - 1;
                if (yy < 0 || yy >= 4 || xx < 0 || xx >= 4) continue;
                s += double(w[((o * 2 + ci) * 3 + ki) * 3 + kj]) * x[((n * 2 + ci) * 4 + yy) * 4 + xx];
              }
          EXPECT_NEAR(y[((n * 3 + o) * 4 + i) * 4 + j], s, 1e-4);
        }
}

// A batch the CPU lowers in several chunks (Note [Conv2d layout]), the last one short: 27 x 900
// floats of im2col per sample, so two samples per 256 KiB chunk and batch 5 runs as 2 + 2 + 1.
// Forward against the direct convolution; gradients (weight accumulated over the chunks, input
// written chunk by chunk) against finite differences.
TEST(LayersTest, Conv2dInChunksMatchesDirectConvolutionAndItsGradients) {
  LayerCase c;
  constexpr int kBatch = 5, kIn = 3, kOut = 4, kSide = 30;
  Conv2d layer(c.ops.get(), {kIn, kSide, kSide}, kOut, 3, 1, 1, "conv");
  ASSERT_EQ(layer.samplesPerChunk(kBatch), 2);
  std::vector<float> w = randomVector(kOut * kIn * 9, 11, 0.5f), b = randomVector(kOut, 12);
  std::copy(w.begin(), w.end(), static_cast<float*>(layer.parameters()[0]->data));
  std::copy(b.begin(), b.end(), static_cast<float*>(layer.parameters()[1]->data));
  std::vector<float> x = randomVector(kBatch * kIn * kSide * kSide, 13), y(kBatch * kOut * kSide * kSide);
  layer.reserve(kBatch);
  layer.forward(x.data(), y.data(), kBatch);
  double worst = 0;
  for (int n = 0; n < kBatch; ++n)
    for (int o = 0; o < kOut; ++o)
      for (int i = 0; i < kSide; ++i)
        for (int j = 0; j < kSide; ++j) {
          double s = b[o];
          for (int ci = 0; ci < kIn; ++ci)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                const int yy = i + ki - 1, xx = j + kj - 1;
                if (yy < 0 || yy >= kSide || xx < 0 || xx >= kSide) continue;
                s += double(w[((o * kIn + ci) * 3 + ki) * 3 + kj]) * x[((n * kIn + ci) * kSide + yy) * kSide + xx];
              }
          worst = std::max(worst, std::fabs(y[((n * kOut + o) * kSide + i) * kSide + j] - s));
        }
  EXPECT_LT(worst, 1e-4);
  checkLayer(layer, kBatch, 14);
}

TEST(LayersTest, MaxPoolGradients) {
  LayerCase c;
  MaxPool2d layer(c.ops.get(), {2, 4, 6}, 2, 0);
  EXPECT_EQ(layer.outputShape(), (Shape{2, 2, 3}));
  checkLayer(layer, 3, 8);
}

TEST(LayersTest, BackwardAccumulatesIntoRebindableGrad) {
  // The reducer may point Parameter::grad at its own buffer: backward must write there.
  LayerCase c;
  Linear layer(c.ops.get(), {4}, 2, "fc");
  std::vector<float> x = randomVector(8, 9), r = randomVector(4, 10), y(4);
  layer.forward(x.data(), y.data(), 2);
  layer.backward(x.data(), y.data(), r.data(), nullptr, 2, {}, 0);
  Parameter* w = layer.parameters()[0];
  std::vector<float> first(static_cast<float*>(w->grad), static_cast<float*>(w->grad) + 8);
  std::vector<float> rebound(8, 1.f);
  w->grad = rebound.data();
  layer.backward(x.data(), y.data(), r.data(), nullptr, 2, {}, 0);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(rebound[i], 1.f + first[i]);
}

}  // namespace
}  // namespace ddp::model
