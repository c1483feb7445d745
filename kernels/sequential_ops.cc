// CPU twins of the ops the declared layer stacks added (Note [Declared layer stacks] in
// common/jobspec/layer_spec.h): average pooling and the mean squared error. The CUDA versions
// (kernels/layer_ops.cu) compute each value with the same formula in the same order.
#include <algorithm>
#include <cstdint>

#include "kernels/layer_ops.h"

namespace ddp::kernels::cpu {

void avgPoolForward(const ConvGeometry& g, const float* x, float* y) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t planes = int64_t{g.batch} * g.channels;
  const int64_t hw = int64_t{g.height} * g.width;
  const float inv = 1.f / static_cast<float>(g.kernelH * g.kernelW);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* in = x + pl * hw;
    float* out = y + pl * oh * ow;
    for (int oy = 0; oy < oh; ++oy) {
      for (int ox = 0; ox < ow; ++ox) {
        float s = 0.f;
        for (int ki = 0; ki < g.kernelH; ++ki) {
          const float* row = in + int64_t{oy * g.stride + ki} * g.width + ox * g.stride;
          for (int kj = 0; kj < g.kernelW; ++kj) s += row[kj];
        }
        out[oy * ow + ox] = s * inv;
      }
    }
  }
}

// Gathered per input element (the windows holding it), as the CUDA kernel does.
void avgPoolBackward(const ConvGeometry& g, const float* dy, float* dx) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t planes = int64_t{g.batch} * g.channels;
  const float inv = 1.f / static_cast<float>(g.kernelH * g.kernelW);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* d = dy + pl * oh * ow;
    float* out = dx + pl * int64_t{g.height} * g.width;
    for (int y = 0; y < g.height; ++y) {
      const int oyLo = y - g.kernelH + 1 > 0 ? (y - g.kernelH + 1 + g.stride - 1) / g.stride : 0;
      const int oyHi = std::min(y / g.stride, oh - 1);
      for (int x = 0; x < g.width; ++x) {
        const int oxLo = x - g.kernelW + 1 > 0 ? (x - g.kernelW + 1 + g.stride - 1) / g.stride : 0;
        const int oxHi = std::min(x / g.stride, ow - 1);
        float s = 0.f;
        for (int oy = oyLo; oy <= oyHi; ++oy) {
          for (int ox = oxLo; ox <= oxHi; ++ox) s += d[oy * ow + ox];
        }
        out[y * g.width + x] = s * inv;
      }
    }
  }
}

void meanSquaredError(const float* pred, const float* target, int rows, int cols, float scale, float* rowLoss,
                      float* dpred) {
  const float inv = 1.f / static_cast<float>(cols);
  for (int r = 0; r < rows; ++r) {
    const int64_t base = int64_t{r} * cols;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) {
      const float e = pred[base + c] - target[base + c];
      s += e * e;
      if (dpred != nullptr) dpred[base + c] = scale * 2.f * e * inv;
    }
    rowLoss[r] = s * inv;
  }
}

}  // namespace ddp::kernels::cpu
