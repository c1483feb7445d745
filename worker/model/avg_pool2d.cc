#include "worker/model/avg_pool2d.h"

namespace ddp::model {

AvgPool2d::AvgPool2d(kernels::LayerOps* ops, const Shape& in, int kernel, int stride)
    : Layer(ops, in), kernel_(kernel), stride_(stride > 0 ? stride : kernel) {
  kernels::ConvGeometry g = geometry(1);
  outputShape_ = {in.at(0), g.outHeight(), g.outWidth()};
}

kernels::ConvGeometry AvgPool2d::geometry(int batch) const {
  return poolGeometry(inputShape_, batch, kernel_, stride_);
}

std::string AvgPool2d::describe() const {
  return "AvgPool2d(" + std::to_string(kernel_) + "x" + std::to_string(kernel_) + ", stride " +
         std::to_string(stride_) + ")";
}

void AvgPool2d::forward(const float* x, float* y, int batch) { ops_->avgPoolForward(geometry(batch), x, y); }

void AvgPool2d::backward(const float* /*x*/, const float* /*y*/, const float* dy, float* dx, int batch,
                         const GradReadyFn& /*ready*/, size_t /*offset*/) {
  if (dx != nullptr) ops_->avgPoolBackward(geometry(batch), dy, dx);
}

}  // namespace ddp::model
