// CUDA layer ops against their CPU twins (the oracle), op by op and through whole models
// (MLP and CNN: same seed, same batch -> same loss and gradients up to float rounding).
// Skips when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"
#include "worker/model/param_io.h"

namespace ddp::kernels {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed) {
  SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.normal();
  return v;
}

class LayerOpsCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto ops = makeCudaLayerOps(0);
    ASSERT_TRUE(ops.isOk()) << ops.status();
    gpu_ = std::move(ops).value();
  }
  // Device copy of a host vector (kept alive by the fixture).
  template <typename T>
  T* up(const std::vector<T>& v) {
    buffers_.emplace_back(gpu_.get());
    buffers_.back().reserve(v.size() * sizeof(T));
    gpu_->copyToDevice(buffers_.back().data(), v.data(), v.size() * sizeof(T));
    return static_cast<T*>(buffers_.back().data());
  }
  template <typename T>
  std::vector<T> down(const T* p, size_t n) {
    std::vector<T> v(n);
    gpu_->copyToHost(v.data(), p, n * sizeof(T));
    EXPECT_TRUE(gpu_->status().isOk()) << gpu_->status();
    return v;
  }
  static void expectNear(const std::vector<float>& got, const std::vector<float>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "index " << i;
    }
  }
  std::unique_ptr<LayerOps> gpu_;
  std::vector<DeviceBuffer> buffers_;
};

TEST_F(LayerOpsCudaTest, GemmMatchesCpu) {
  const int m = 33, n = 17, k = 65;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      auto a = rnd(m * k, 1), b = rnd(k * n, 2), c = rnd(m * n, 3);
      float* dc = up(c);
      gpu_->gemm(ta, tb, m, n, k, 0.5f, up(a), up(b), 1.5f, dc);
      cpu::gemm(ta, tb, m, n, k, 0.5f, a.data(), b.data(), 1.5f, c.data());
      expectNear(down(dc, c.size()), c, 1e-4);
    }
  }
}

TEST_F(LayerOpsCudaTest, ElementwiseBiasAndLayoutOpsMatchCpu) {
  const int rows = 37, cols = 29;
  auto x = rnd(rows * cols, 4), dy = rnd(rows * cols, 5), b = rnd(cols, 6);
  for (Activation a : {Activation::kRelu, Activation::kTanh, Activation::kGelu, Activation::kIdentity}) {
    std::vector<float> y(x.size()), dx(x.size());
    cpu::activationForward(a, x.data(), y.data(), x.size());
    cpu::activationBackward(a, x.data(), y.data(), dy.data(), dx.data(), x.size());
    float* dxg = up(x);
    float* dyg = up(std::vector<float>(x.size()));
    gpu_->activationForward(a, dxg, dyg, x.size());
    expectNear(down(dyg, y.size()), y, 1e-5);
    float* ddx = up(std::vector<float>(x.size()));
    gpu_->activationBackward(a, dxg, dyg, up(dy), ddx, x.size());
    expectNear(down(ddx, dx.size()), dx, 1e-5);
  }
  auto y = x;
  float* yg = up(y);
  gpu_->biasAdd(yg, up(b), rows, cols);
  cpu::biasAdd(y.data(), b.data(), rows, cols);
  expectNear(down(yg, y.size()), y, 1e-6);
  std::vector<float> db(cols, 1.f);
  float* dbg = up(db);
  gpu_->biasGrad(up(dy), rows, cols, dbg, true);
  cpu::biasGrad(dy.data(), rows, cols, db.data(), true);
  expectNear(down(dbg, db.size()), db, 1e-5);
  // channel bias over (n=3, c=5, p=41), and swap of leading dims
  auto z = rnd(3 * 5 * 41, 7), cb = rnd(5, 8);
  std::vector<float> cdb(5, 2.f);
  float* zg = up(z);
  float* cdbg = up(cdb);
  gpu_->channelBiasGrad(zg, 3, 5, 41, cdbg, true);
  cpu::channelBiasGrad(z.data(), 3, 5, 41, cdb.data(), true);
  expectNear(down(cdbg, 5), cdb, 1e-5);
  gpu_->channelBiasAdd(zg, up(cb), 3, 5, 41);
  cpu::channelBiasAdd(z.data(), cb.data(), 3, 5, 41);
  expectNear(down(zg, z.size()), z, 1e-6);
  std::vector<float> t(z.size());
  float* tg = up(t);
  gpu_->swapLeadingDims(zg, 3, 5, 41, tg);
  cpu::swapLeadingDims(z.data(), 3, 5, 41, t.data());
  expectNear(down(tg, t.size()), t, 0);
}

TEST_F(LayerOpsCudaTest, Im2colCol2imAndMaxPoolMatchCpu) {
  for (auto [k, stride, pad] : {std::tuple{3, 1, 1}, std::tuple{3, 2, 0}, std::tuple{5, 2, 2}}) {
    ConvGeometry g{.batch = 3, .channels = 2, .height = 9, .width = 8, .kernelH = k, .kernelW = k,
                   .stride = stride, .pad = pad};
    auto img = rnd(3 * 2 * 9 * 8, 9);
    std::vector<float> col(g.colRows() * g.colCols());
    float* colg = up(col);
    gpu_->im2col(g, up(img), colg);
    cpu::im2col(g, img.data(), col.data());
    expectNear(down(colg, col.size()), col, 0);
    auto c2 = rnd(col.size(), 10);
    std::vector<float> back(img.size());
    float* backg = up(back);
    gpu_->col2im(g, up(c2), backg);
    cpu::col2im(g, c2.data(), back.data());
    expectNear(down(backg, back.size()), back, 1e-5);
  }
  for (auto [k, s] : {std::pair{2, 2}, std::pair{3, 2}}) {
    ConvGeometry g{.batch = 2, .channels = 3, .height = 8, .width = 7, .kernelH = k, .kernelW = k, .stride = s};
    const size_t outN = 2 * 3 * g.outHeight() * g.outWidth();
    auto x = rnd(2 * 3 * 8 * 7, 11), dy = rnd(outN, 12);
    std::vector<float> y(outN), dx(x.size());
    std::vector<int32_t> am(outN);
    float* yg = up(y);
    int32_t* amg = up(am);
    float* xg = up(x);
    gpu_->maxPoolForward(g, xg, yg, amg);
    cpu::maxPoolForward(g, x.data(), y.data(), am.data());
    expectNear(down(yg, outN), y, 0);
    EXPECT_EQ(down(amg, outN), am);
    float* dxg = up(dx);
    gpu_->maxPoolBackward(g, up(dy), amg, dxg);
    cpu::maxPoolBackward(g, dy.data(), am.data(), dx.data());
    expectNear(down(dxg, dx.size()), dx, 1e-6);
  }
}

TEST_F(LayerOpsCudaTest, SoftmaxCrossEntropyMatchesCpu) {
  const int rows = 70, classes = 10;
  auto z = rnd(rows * classes, 13);
  std::vector<int32_t> labels(rows);
  for (int r = 0; r < rows; ++r) labels[r] = (r * 7) % classes;
  std::vector<float> p(z.size()), loss(rows), d(z.size());
  std::vector<int32_t> correct(rows);
  cpu::softmaxCrossEntropyForward(z.data(), labels.data(), rows, classes, p.data(), loss.data(), correct.data());
  cpu::softmaxCrossEntropyBackward(p.data(), labels.data(), rows, classes, 1.f / rows, d.data());
  float* pg = up(p);
  float* lg = up(loss);
  int32_t* cg = up(correct);
  int32_t* yg = up(labels);
  gpu_->softmaxCrossEntropyForward(up(z), yg, rows, classes, pg, lg, cg);
  float* dg = up(d);
  gpu_->softmaxCrossEntropyBackward(pg, yg, rows, classes, 1.f / rows, dg);
  expectNear(down(pg, p.size()), p, 1e-5);
  expectNear(down(lg, rows), loss, 1e-5);
  EXPECT_EQ(down(cg, rows), correct);
  expectNear(down(dg, d.size()), d, 1e-5);
}

// Whole models: identical seeds give identical parameters on both devices, and one training
// step's loss and gradients agree.
void compareModels(model::Module& cpuModel, model::Module& gpuModel, int batch, uint64_t seed) {
  const int64_t numel = model::shapeNumel(cpuModel.inputShape());
  auto x = rnd(batch * numel, seed);
  std::vector<int32_t> y(batch);
  for (int i = 0; i < batch; ++i) y[i] = i % static_cast<int>(cpuModel.outputFeatures());
  auto a = cpuModel.forwardBackward(x.data(), y.data(), batch);
  auto b = gpuModel.forwardBackward(x.data(), y.data(), batch);
  ASSERT_TRUE(a.isOk() && b.isOk()) << b.status();
  EXPECT_NEAR(a->lossSum, b->lossSum, 1e-4 * batch);
  EXPECT_EQ(a->correct, b->correct);
  auto cp = cpuModel.parameters(), gp = gpuModel.parameters();
  ASSERT_EQ(cp.size(), gp.size());
  for (size_t i = 0; i < cp.size(); ++i) {
    std::vector<float> g(gp[i]->numel());
    gpuModel.ops().copyToHost(g.data(), gp[i]->grad, gp[i]->bytes());
    const float* want = static_cast<const float*>(cp[i]->grad);
    double scale = 1e-6;
    for (size_t k = 0; k < g.size(); ++k) scale = std::max(scale, std::fabs(double(want[k])));
    for (size_t k = 0; k < g.size(); ++k) ASSERT_NEAR(g[k], want[k], 1e-3 * scale) << cp[i]->name << "[" << k << "]";
  }
  // Checkpoint bytes are device-independent.
  EXPECT_EQ(model::saveParameters(cp, cpuModel.ops()), model::saveParameters(gp, gpuModel.ops()));
}

TEST_F(LayerOpsCudaTest, MlpAndCnnMatchCpu) {
  model::MlpConfig mlp{.inputs = 40, .hidden = {64, 32}, .classes = 10, .activation = Activation::kGelu};
  auto a = model::buildMlp(mlp, {.seed = 3}).value();
  auto b = model::buildMlp(mlp, {.device = Device::cuda(0), .seed = 3}).value();
  compareModels(*a, *b, 16, 21);
  model::CnnConfig cnn{.input = {1, 12, 12}, .convChannels = {4, 8}, .hidden = {16}, .classes = 5};
  auto c = model::buildCnn(cnn, {.seed = 4}).value();
  auto d = model::buildCnn(cnn, {.device = Device::cuda(0), .seed = 4}).value();
  compareModels(*c, *d, 8, 22);
}

}  // namespace
}  // namespace ddp::kernels
