#include "worker/model/max_pool2d.h"

namespace ddp::model {

MaxPool2d::MaxPool2d(kernels::LayerOps* ops, const Shape& in, int kernel, int stride)
    : Layer(ops, in), kernel_(kernel), stride_(stride > 0 ? stride : kernel), argmax_(ops) {
  kernels::ConvGeometry g = geometry(1);
  outputShape_ = {in.at(0), g.outHeight(), g.outWidth()};
}

kernels::ConvGeometry MaxPool2d::geometry(int batch) const {
  return poolGeometry(inputShape_, batch, kernel_, stride_);
}

std::string MaxPool2d::describe() const {
  return "MaxPool2d(" + std::to_string(kernel_) + "x" + std::to_string(kernel_) + ", stride " +
         std::to_string(stride_) + ")";
}

void MaxPool2d::reserve(int batch) {
  argmax_.reserve(static_cast<size_t>(batch) * shapeNumel(outputShape_) * sizeof(int32_t));
}

void MaxPool2d::forward(const float* x, float* y, int batch) {
  reserve(batch);
  ops_->maxPoolForward(geometry(batch), x, y, argmax_.i32());
}

void MaxPool2d::backward(const float* /*x*/, const float* /*y*/, const float* dy, float* dx,
                         int batch, const GradReadyFn& /*ready*/, size_t /*offset*/) {
  if (dx == nullptr) return;
  ops_->maxPoolBackward(geometry(batch), dy, argmax_.i32(), dx);
}

}  // namespace ddp::model
