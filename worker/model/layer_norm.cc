#include "worker/model/layer_norm.h"

#include <vector>

namespace ddp::model {

LayerNorm::LayerNorm(kernels::LayerOps* ops, const Shape& in, float eps, const std::string& name)
    : Layer(ops, in), features_(static_cast<int>(shapeNumel(in))), eps_(eps), mean_(ops), rstd_(ops),
      dxScratch_(ops) {
  outputShape_ = in;
  weight_.allocate(ops, name + ".weight", {features_});
  bias_.allocate(ops, name + ".bias", {features_});
}

std::string LayerNorm::describe() const {
  return "LayerNorm(" + std::to_string(features_) + ", eps " + std::to_string(eps_) + ")";
}

void LayerNorm::initialize(uint64_t /*seed*/, size_t /*offset*/) {
  const std::vector<float> ones(features_, 1.f);
  ops_->copyToDevice(weight_.param.data, ones.data(), ones.size() * sizeof(float));
  ops_->fillZero(bias_.param.data, bias_.param.bytes());
}

void LayerNorm::reserve(int batch) {
  mean_.reserve(static_cast<size_t>(batch) * sizeof(float));
  rstd_.reserve(static_cast<size_t>(batch) * sizeof(float));
}

void LayerNorm::forward(const float* x, float* y, int batch) {
  reserve(batch);
  ops_->layerNormForward(x, static_cast<const float*>(weight_.param.data), static_cast<const float*>(bias_.param.data),
                         batch, features_, eps_, y, mean_.f32(), rstd_.f32());
}

void LayerNorm::backward(const float* x, const float* /*y*/, const float* dy, float* dx, int batch,
                         const GradReadyFn& ready, size_t offset) {
  if (dx == nullptr) {  // the op always writes the input gradient
    dxScratch_.reserve(static_cast<size_t>(batch) * features_ * sizeof(float));
    dx = dxScratch_.f32();
  }
  ops_->layerNormBackward(x, static_cast<const float*>(weight_.param.data), mean_.f32(), rstd_.f32(), dy, batch,
                          features_, dx, static_cast<float*>(weight_.param.grad), static_cast<float*>(bias_.param.grad),
                          /*accumulateParams=*/true);
  if (ready) {
    ready(offset + 1);
    ready(offset + 0);
  }
}

}  // namespace ddp::model
