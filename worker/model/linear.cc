#include "worker/model/linear.h"

namespace ddp::model {

Linear::Linear(kernels::LayerOps* ops, const Shape& in, int64_t outFeatures,
               const std::string& name)
    : Layer(ops, in), inFeatures_(shapeNumel(in)), outFeatures_(outFeatures) {
  outputShape_ = {outFeatures};
  weight_.allocate(ops, name + ".weight", {outFeatures_, inFeatures_});
  bias_.allocate(ops, name + ".bias", {outFeatures_});
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(inFeatures_) + " -> " + std::to_string(outFeatures_) + ")";
}

void Linear::forward(const float* x, float* y, int batch) {
  const int in = static_cast<int>(inFeatures_), out = static_cast<int>(outFeatures_);
  ops_->gemm(false, true, batch, out, in, 1.f, x, static_cast<const float*>(weight_.param.data),
             0.f, y);
  ops_->biasAdd(y, static_cast<const float*>(bias_.param.data), batch, out);
}

void Linear::backward(const float* x, const float* /*y*/, const float* dy, float* dx, int batch,
                      const GradReadyFn& ready, size_t offset) {
  const int in = static_cast<int>(inFeatures_), out = static_cast<int>(outFeatures_);
  // Parameter gradients first so that communication can start before dx is computed.
  ops_->biasGrad(dy, batch, out, static_cast<float*>(bias_.param.grad), /*accumulate=*/true);
  if (ready) ready(offset + 1);
  ops_->gemm(true, false, out, in, batch, 1.f, dy, x, 1.f,
             static_cast<float*>(weight_.param.grad));
  if (ready) ready(offset + 0);
  if (dx != nullptr) {
    ops_->gemm(false, false, batch, in, out, 1.f, dy,
               static_cast<const float*>(weight_.param.data), 0.f, dx);
  }
}

}  // namespace ddp::model
