#include "worker/model/conv2d.h"

namespace ddp::model {

// Note [Conv2d layout]
// The whole batch is lowered at once: im2col gives col = [C*k*k, N*OH*OW], one GEMM gives
// W [OC, C*k*k] x col = [OC, N*OH*OW], and swapping the two leading dims yields NCHW output.
// One large GEMM per step beats N small ones on a CPU, and the weight gradient is again a
// single GEMM: dW += dY' col^T with dY' the output gradient in [OC, N*OH*OW] layout.

Conv2d::Conv2d(kernels::LayerOps* ops, const Shape& in, int outChannels, int kernel, int stride,
               int pad, const std::string& name)
    : Layer(ops, in), inChannels_(static_cast<int>(in.at(0))), outChannels_(outChannels),
      kernel_(kernel), stride_(stride), pad_(pad), col_(ops), work_(ops), dcol_(ops) {
  kernels::ConvGeometry g = geometry(1);
  outputShape_ = {outChannels, g.outHeight(), g.outWidth()};
  weight_.allocate(ops, name + ".weight", {outChannels, inChannels_, kernel, kernel});
  bias_.allocate(ops, name + ".bias", {outChannels});
}

kernels::ConvGeometry Conv2d::geometry(int batch) const {
  kernels::ConvGeometry g;
  g.batch = batch;
  g.channels = inChannels_;
  g.height = static_cast<int>(inputShape_.at(1));
  g.width = static_cast<int>(inputShape_.at(2));
  g.kernelH = g.kernelW = kernel_;
  g.stride = stride_;
  g.pad = pad_;
  return g;
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(inChannels_) + " -> " + std::to_string(outChannels_) + ", " +
         std::to_string(kernel_) + "x" + std::to_string(kernel_) + ", stride " +
         std::to_string(stride_) + ", pad " + std::to_string(pad_) + ")";
}

void Conv2d::reserve(int batch) {
  kernels::ConvGeometry g = geometry(batch);
  const size_t colBytes = static_cast<size_t>(g.colRows() * g.colCols()) * sizeof(float);
  col_.reserve(colBytes);  // dcol_ is sized by backward (evaluation batches never need it)
  work_.reserve(static_cast<size_t>(outChannels_) * g.colCols() * sizeof(float));
}

void Conv2d::forward(const float* x, float* y, int batch) {
  reserve(batch);
  kernels::ConvGeometry g = geometry(batch);
  const int64_t ohw = int64_t{g.outHeight()} * g.outWidth();
  ops_->im2col(g, x, col_.f32());
  ops_->gemm(false, false, outChannels_, static_cast<int>(g.colCols()),
             static_cast<int>(g.colRows()), 1.f, static_cast<const float*>(weight_.param.data),
             col_.f32(), 0.f, work_.f32());
  ops_->swapLeadingDims(work_.f32(), outChannels_, batch, ohw, y);
  ops_->channelBiasAdd(y, static_cast<const float*>(bias_.param.data), batch, outChannels_, ohw);
}

void Conv2d::backward(const float* x, const float* /*y*/, const float* dy, float* dx, int batch,
                      const GradReadyFn& ready, size_t offset) {
  (void)x;  // the im2col of x from forward is reused
  kernels::ConvGeometry g = geometry(batch);
  const int64_t ohw = int64_t{g.outHeight()} * g.outWidth();
  ops_->channelBiasGrad(dy, batch, outChannels_, ohw, static_cast<float*>(bias_.param.grad),
                        /*accumulate=*/true);
  if (ready) ready(offset + 1);
  ops_->swapLeadingDims(dy, batch, outChannels_, ohw, work_.f32());  // -> [OC, N*OHW]
  ops_->gemm(false, true, outChannels_, static_cast<int>(g.colRows()),
             static_cast<int>(g.colCols()), 1.f, work_.f32(), col_.f32(), 1.f,
             static_cast<float*>(weight_.param.grad));
  if (ready) ready(offset + 0);
  if (dx != nullptr) {
    dcol_.reserve(static_cast<size_t>(g.colRows() * g.colCols()) * sizeof(float));
    ops_->gemm(true, false, static_cast<int>(g.colRows()), static_cast<int>(g.colCols()),
               outChannels_, 1.f, static_cast<const float*>(weight_.param.data), work_.f32(),
               0.f, dcol_.f32());
    ops_->col2im(g, dcol_.f32(), dx);
  }
}

}  // namespace ddp::model
