#include "worker/model/conv2d.h"

#include <algorithm>

#include "common/conv_lowering.h"

namespace ddp::model {

// Note [Conv2d layout]
// The batch is lowered in chunks of samples: im2col gives col = [C*k*k, n*OH*OW] for a chunk of
// n samples, one GEMM gives W [OC, C*k*k] x col = [OC, n*OH*OW], and swapping the two leading
// dims writes the chunk's NCHW output. The weight gradient is one GEMM per chunk, accumulated:
// dW += dY' col^T with dY' the chunk's output gradient in [OC, n*OH*OW] layout. On the CPU a
// chunk's col is at most kConvChunkColBytes, so col, its gradient and the product stay in the
// core's L2 cache; backward lowers each chunk again (im2col is cheap next to a trip to memory).
// Lowering the whole batch at once (64 samples of conv 8 -> 16 at 14x14: a 3.6 MB col, twice)
// ran from L3 and memory: two workers on two cores then slowed each other's compute by 12 %
// where L2-sized chunks do not contend (docs/PERFORMANCE.md: the CNN step 5.44 -> 4.79 ms with
// one worker, 6.16 -> 5.27 ms with two). On a GPU the whole batch is one chunk (one large GEMM
// per step; backward reuses forward's col).

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

int64_t Conv2d::outPixels() const { return outputShape_.at(1) * outputShape_.at(2); }

int64_t Conv2d::inSampleFloats() const { return int64_t{inChannels_} * inputShape_.at(1) * inputShape_.at(2); }

int Conv2d::samplesPerChunk(int batch) const {
  if (!ops_->device().isCpu()) return batch;
  const kernels::ConvGeometry one = geometry(1);
  const size_t colBytes = static_cast<size_t>(one.colRows() * one.colCols()) * sizeof(float);
  return static_cast<int>(convSamplesPerChunk(static_cast<int64_t>(colBytes), batch));
}

void Conv2d::reserve(int batch) {
  kernels::ConvGeometry g = geometry(samplesPerChunk(batch));
  const size_t colBytes = static_cast<size_t>(g.colRows() * g.colCols()) * sizeof(float);
  col_.reserve(colBytes);  // dcol_ is sized by backward (evaluation batches never need it)
  work_.reserve(static_cast<size_t>(outChannels_) * g.colCols() * sizeof(float));
}

void Conv2d::forward(const float* x, float* y, int batch) {
  reserve(batch);
  const int chunk = samplesPerChunk(batch);
  const int64_t ohw = outPixels(), inPlane = inSampleFloats();
  for (int s0 = 0; s0 < batch; s0 += chunk) {
    const int n = std::min(chunk, batch - s0);
    const kernels::ConvGeometry g = geometry(n);
    ops_->im2col(g, x + s0 * inPlane, col_.f32());
    ops_->gemm(false, false, outChannels_, static_cast<int>(g.colCols()), static_cast<int>(g.colRows()), 1.f,
               static_cast<const float*>(weight_.param.data), col_.f32(), 0.f, work_.f32());
    ops_->swapLeadingDims(work_.f32(), outChannels_, n, ohw, y + s0 * outChannels_ * ohw);
  }
  ops_->channelBiasAdd(y, static_cast<const float*>(bias_.param.data), batch, outChannels_, ohw);
}

void Conv2d::backward(const float* x, const float* /*y*/, const float* dy, float* dx, int batch,
                      const GradReadyFn& ready, size_t offset) {
  const int chunk = samplesPerChunk(batch);
  const int64_t ohw = outPixels(), inPlane = inSampleFloats();
  ops_->channelBiasGrad(dy, batch, outChannels_, ohw, static_cast<float*>(bias_.param.grad),
                        /*accumulate=*/true);
  if (ready) ready(offset + 1);
  for (int s0 = 0; s0 < batch; s0 += chunk) {
    const int n = std::min(chunk, batch - s0);
    const kernels::ConvGeometry g = geometry(n);
    // One chunk: forward's im2col is still in col_; else this chunk's is lowered again.
    if (chunk < batch) ops_->im2col(g, x + s0 * inPlane, col_.f32());
    ops_->swapLeadingDims(dy + s0 * outChannels_ * ohw, n, outChannels_, ohw, work_.f32());  // -> [OC, n*OHW]
    ops_->gemm(false, true, outChannels_, static_cast<int>(g.colRows()), static_cast<int>(g.colCols()), 1.f,
               work_.f32(), col_.f32(), 1.f, static_cast<float*>(weight_.param.grad));
    if (dx == nullptr) continue;
    dcol_.reserve(static_cast<size_t>(g.colRows() * g.colCols()) * sizeof(float));
    ops_->gemm(true, false, static_cast<int>(g.colRows()), static_cast<int>(g.colCols()), outChannels_, 1.f,
               static_cast<const float*>(weight_.param.data), work_.f32(), 0.f, dcol_.f32());
    ops_->col2im(g, dcol_.f32(), dx + s0 * inPlane);
  }
  if (ready) ready(offset + 0);
}

}  // namespace ddp::model
