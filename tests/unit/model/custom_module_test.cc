// The worked example of docs/MODELS.md: a user-written Module (multinomial logistic
// regression) built on LayerOps and ParamStorage. Oracle: the built-in MLP with no hidden
// layer computes the same function, so logits, loss and gradients must match it.
#include <gtest/gtest.h>

#include <cstring>

#include "common/split_mix_rng.h"
#include "worker/model/mlp.h"
#include "worker/model/module.h"

namespace ddp::model {
namespace {

// --- docs/MODELS.md example begins ---
class LogisticRegression final : public Module {
 public:
  LogisticRegression(int64_t inputs, int64_t classes)
      : Module(kernels::makeCpuLayerOps(/*threads=*/1)), inputs_(inputs), classes_(classes),
        logits_(&ops()) {
    weight_.allocate(&ops(), "linear.weight", {classes, inputs});
    bias_.allocate(&ops(), "linear.bias", {classes});
  }

  std::string describe() const override { return "LogisticRegression"; }
  std::vector<Parameter*> parameters() override { return {&weight_.param, &bias_.param}; }
  Shape inputShape() const override { return {inputs_}; }
  int64_t outputFeatures() const override { return classes_; }

  const float* forward(const float* x, int batch) override {
    logits_.reserve(sizeof(float) * batch * classes_);  // grows once, then reused
    ops().gemm(false, true, batch, int(classes_), int(inputs_), 1.f, x,
               static_cast<const float*>(weight_.param.data), 0.f, logits_.f32());
    ops().biasAdd(logits_.f32(), static_cast<const float*>(bias_.param.data), batch, int(classes_));
    input_ = x;  // kept for backward
    batch_ = batch;
    return logits_.f32();
  }

  void backward(const float* dlogits, const GradReadyFn& ready) override {
    // Read Parameter::grad afresh: the reducer may have rebound it to its bucket.
    ops().biasGrad(dlogits, batch_, int(classes_), static_cast<float*>(bias_.param.grad), true);
    if (ready) ready(1);  // bias (index 1) first: descending order
    ops().gemm(true, false, int(classes_), int(inputs_), batch_, 1.f, dlogits, input_, 1.f,
               static_cast<float*>(weight_.param.grad));
    if (ready) ready(0);
  }

 private:
  int64_t inputs_, classes_;
  ParamStorage weight_, bias_;
  kernels::DeviceBuffer logits_;
  const float* input_ = nullptr;
  int batch_ = 0;
};
// --- docs/MODELS.md example ends ---

TEST(CustomModuleTest, MatchesTheEquivalentBuiltInModel) {
  LogisticRegression custom(12, 4);
  auto builtin = buildMlp({.inputs = 12, .hidden = {}, .classes = 4}, {.seed = 9}).value();
  // Same parameters in both.
  for (size_t i = 0; i < 2; ++i) {
    Parameter* from = builtin->parameters()[i];
    Parameter* to = custom.parameters()[i];
    ASSERT_EQ(from->shape, to->shape);
    std::memcpy(to->data, from->data, from->bytes());
  }
  SplitMixRng rng(3);
  std::vector<float> x(5 * 12);
  for (float& v : x) v = rng.normal();
  std::vector<int32_t> y = {0, 3, 1, 2, 3};
  std::vector<size_t> order;
  auto a = custom.forwardBackward(x.data(), y.data(), 5, [&](size_t i) { order.push_back(i); });
  auto b = builtin->forwardBackward(x.data(), y.data(), 5);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(order, (std::vector<size_t>{1, 0}));
  EXPECT_DOUBLE_EQ(a->lossSum, b->lossSum);
  for (size_t i = 0; i < 2; ++i) {
    Parameter* p = custom.parameters()[i];
    EXPECT_EQ(std::memcmp(p->grad, builtin->parameters()[i]->grad, p->bytes()), 0) << p->name;
  }
}

}  // namespace
}  // namespace ddp::model
