// CUDA ops of the declared stacks against their CPU twins (average pooling, sigmoid, mean
// squared error) on odd shapes, and a whole declared stack with every layer kind: same seed, same
// batch -> same loss and gradients up to float rounding, on both losses. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"
#include "worker/model/sequential_builder.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.normal();
  return v;
}

class SequentialOpsCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto ops = makeCudaLayerOps(0);
    ASSERT_TRUE(ops.isOk()) << ops.status();
    gpu_ = std::move(ops).value();
  }
  float* up(const std::vector<float>& v) {
    buffers_.emplace_back(gpu_.get());
    buffers_.back().reserve(v.size() * sizeof(float));
    gpu_->copyToDevice(buffers_.back().data(), v.data(), v.size() * sizeof(float));
    return buffers_.back().f32();
  }
  std::vector<float> down(const float* p, size_t n) {
    std::vector<float> v(n);
    gpu_->copyToHost(v.data(), p, n * sizeof(float));
    EXPECT_TRUE(gpu_->status().isOk()) << gpu_->status();
    return v;
  }
  static void expectNear(const std::vector<float>& got, const std::vector<float>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
  }
  std::unique_ptr<LayerOps> gpu_;
  std::vector<DeviceBuffer> buffers_;
};

TEST_F(SequentialOpsCudaTest, AvgPoolMatchesCpu) {
  for (auto [k, stride] : {std::pair{2, 2}, std::pair{3, 1}, std::pair{3, 2}}) {
    ConvGeometry g;
    g.batch = 3;
    g.channels = 5;
    g.height = 9;
    g.width = 7;
    g.kernelH = g.kernelW = k;
    g.stride = stride;
    const size_t in = 3 * 5 * 9 * 7, out = size_t{3} * 5 * g.outHeight() * g.outWidth();
    const auto x = rnd(in, 1), dy = rnd(out, 2);
    std::vector<float> y(out), dx(in);
    cpu::avgPoolForward(g, x.data(), y.data());
    cpu::avgPoolBackward(g, dy.data(), dx.data());
    float* yg = up(std::vector<float>(out));
    float* dxg = up(std::vector<float>(in));
    gpu_->avgPoolForward(g, up(x), yg);
    gpu_->avgPoolBackward(g, up(dy), dxg);
    expectNear(down(yg, out), y, 1e-5);
    expectNear(down(dxg, in), dx, 1e-5);
  }
}

TEST_F(SequentialOpsCudaTest, SigmoidAndMeanSquaredErrorMatchCpu) {
  const size_t n = 1001;
  const auto x = rnd(n, 3), dy = rnd(n, 4);
  std::vector<float> y(n), dx(n);
  cpu::activationForward(Activation::kSigmoid, x.data(), y.data(), n);
  cpu::activationBackward(Activation::kSigmoid, x.data(), y.data(), dy.data(), dx.data(), n);
  float* yg = up(std::vector<float>(n));
  float* dxg = up(std::vector<float>(n));
  float* xg = up(x);
  gpu_->activationForward(Activation::kSigmoid, xg, yg, n);
  gpu_->activationBackward(Activation::kSigmoid, xg, yg, up(dy), dxg, n);
  expectNear(down(yg, n), y, 1e-6);
  expectNear(down(dxg, n), dx, 1e-6);
  const int rows = 37, cols = 3;
  const auto p = rnd(rows * cols, 5), t = rnd(rows * cols, 6);
  std::vector<float> loss(rows), d(rows * cols);
  cpu::meanSquaredError(p.data(), t.data(), rows, cols, 0.25f, loss.data(), d.data());
  float* lg = up(std::vector<float>(rows));
  float* dg = up(std::vector<float>(rows * cols));
  gpu_->meanSquaredError(up(p), up(t), rows, cols, 0.25f, lg, dg);
  expectNear(down(lg, rows), loss, 1e-5);
  expectNear(down(dg, rows * cols), d, 1e-5);
}

TEST_F(SequentialOpsCudaTest, AStackWithEveryKindMatchesCpu) {
  using K = LayerKind;
  const std::vector<LayerSpec> layers = {
      {.kind = K::kConv2d, .out = 3, .kernel = 3, .stride = 2, .padding = 1},
      {.kind = K::kResidual, .layers = {{.kind = K::kConv2d, .out = 3, .kernel = 3, .padding = 1}, {.kind = K::kTanh}}},
      {.kind = K::kMaxPool2d, .kernel = 2},
      {.kind = K::kAvgPool2d, .kernel = 2, .stride = 1},
      {.kind = K::kSigmoid},
      {.kind = K::kFlatten},
      {.kind = K::kLayerNorm},
      {.kind = K::kDropout, .p = 0.2},
      {.kind = K::kLinear, .out = 7},
      {.kind = K::kGelu},
      {.kind = K::kResidual, .layers = {{.kind = K::kLinear, .out = 7}, {.kind = K::kRelu}}},
      {.kind = K::kLinear, .out = 5}};
  auto a = model::buildSequential(layers, {2, 11, 9}, {.seed = 3}).value();
  auto b = model::buildSequential(layers, {2, 11, 9}, {.device = Device::cuda(0), .seed = 3}).value();
  const int n = 7;
  const auto x = rnd(size_t{n} * 2 * 11 * 9, 7);
  std::vector<int32_t> y;
  for (int i = 0; i < n; ++i) y.push_back(i % 5);
  const auto values = rnd(size_t{n} * 5, 8);
  for (bool mse : {false, true}) {
    SCOPED_TRACE(mse ? "mse" : "crossEntropy");
    model::Batch batch{.size = n, .features = x.data()};
    if (mse) {
      batch.values = values.data();
    } else {
      batch.classes = y.data();
    }
    a->zeroGrad();
    b->zeroGrad();
    auto sa = a->forwardBackward(batch, {}, 1.f, 99);
    auto sb = b->forwardBackward(batch, {}, 1.f, 99);
    ASSERT_TRUE(sa.isOk() && sb.isOk()) << sa.status() << sb.status();
    EXPECT_NEAR(sa->lossSum, sb->lossSum, 1e-4 * (1 + std::fabs(sa->lossSum)));
    for (size_t i = 0; i < a->parameters().size(); ++i) {
      Parameter* pa = a->parameters()[i];
      Parameter* pb = b->parameters()[i];
      std::vector<float> ga(static_cast<float*>(pa->grad), static_cast<float*>(pa->grad) + pa->numel());
      SCOPED_TRACE(pa->name);
      expectNear(down(static_cast<float*>(pb->grad), pb->numel()), ga, 2e-4);
    }
  }
}

}  // namespace
}  // namespace ddp::kernels
