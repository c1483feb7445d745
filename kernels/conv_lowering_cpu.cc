// CPU twins of the convolution lowering (im2col, col2im, the leading-dims swap) and of max
// pooling (kernels/layer_ops.h). The CUDA versions are in kernels/layer_ops.cu.
//
// Note [CPU lowering speed]: these ops move memory and do little arithmetic, and in the CNN
// they took more of a step than its GEMMs (a profile of bench_train's CNN, one worker: im2col
// with its row copies 23 % of the step, max pooling 19 %, the GEMMs 33 %). Two things made them
// slow, and both are avoided here:
//  - im2col copied each output row on its own (a library memcpy of 14-28 floats, ~10 ns of
//    call for ~50 bytes). With stride 1 and "same" width (OW == W: 2*pad == kernelW - 1) the
//    valid rows of one lowered row are one contiguous span of the input plane, shifted by a
//    constant, so it is copied with one memcpy and the padding columns it wrapped into are
//    zeroed after. Other geometries keep the row-by-row copy.
//  - The 2x2 max pool's final choice compiled to a conditional jump that mispredicted on about
//    half of the windows (ReLU outputs: the larger half of a window is random). The choices are
//    written as integers and std::max, which compile to selects.
// Both give the same bits as before (copies and comparisons; no arithmetic changed).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/layer_ops.h"

namespace ddp::kernels::cpu {
namespace {

// [begin, end) of the output positions o (o*stride + shift in [0, size)) that read inside the
// input, clamped to [0, outSize).
struct Span {
  int begin, end;
};
Span validSpan(int shift, int size, int stride, int outSize) {
  int begin = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  int end = (size - 1 - shift) < 0 ? 0 : (size - 1 - shift) / stride + 1;
  begin = std::min(begin, outSize);
  end = std::clamp(end, begin, outSize);
  return {begin, end};
}

// One lowered row (kernel offset ki, kj) of one sample's plane into dst (OH*OW), for stride 1
// and OW == W: the valid rectangle is one contiguous copy (Note [CPU lowering speed]).
void lowerSameWidth(const ConvGeometry& g, const float* plane, int ki, Span ys, Span xs, int shift, float* dst) {
  const int oh = g.outHeight(), ow = g.outWidth();
  std::fill(dst, dst + int64_t{ys.begin} * ow, 0.f);
  std::fill(dst + int64_t{ys.end} * ow, dst + int64_t{oh} * ow, 0.f);
  if (ys.begin >= ys.end) return;
  if (xs.begin >= xs.end) {
    std::fill(dst + int64_t{ys.begin} * ow, dst + int64_t{ys.end} * ow, 0.f);
    return;
  }
  const int64_t first = int64_t{ys.begin} * ow + xs.begin;
  const int64_t count = int64_t{ys.end - 1 - ys.begin} * ow + (xs.end - xs.begin);
  const float* src = plane + int64_t{ys.begin - g.pad + ki} * g.width + shift + xs.begin;
  std::memcpy(dst + first, src, count * sizeof(float));
  for (int oy = ys.begin; oy < ys.end; ++oy) {
    float* row = dst + int64_t{oy} * ow;
    std::fill(row, row + xs.begin, 0.f);
    std::fill(row + xs.end, row + ow, 0.f);
  }
}

// The general case: row by row, zeros where the window reads padding.
void lowerRows(const ConvGeometry& g, const float* plane, int ki, Span xs, int shift, float* dst) {
  const int oh = g.outHeight(), ow = g.outWidth();
  for (int oy = 0; oy < oh; ++oy) {
    const int iy = oy * g.stride - g.pad + ki;
    float* row = dst + int64_t{oy} * ow;
    if (iy < 0 || iy >= g.height) {
      std::fill(row, row + ow, 0.f);
      continue;
    }
    const float* src = plane + int64_t{iy} * g.width + shift;
    std::fill(row, row + xs.begin, 0.f);
    if (g.stride == 1) {
      std::memcpy(row + xs.begin, src + xs.begin, (xs.end - xs.begin) * sizeof(float));
    } else {
      for (int ox = xs.begin; ox < xs.end; ++ox) row[ox] = src[ox * g.stride];
    }
    std::fill(row + xs.end, row + ow, 0.f);
  }
}

}  // namespace

void im2col(const ConvGeometry& g, const float* image, float* col) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t ohw = int64_t{oh} * ow;
  const int64_t cols = g.colCols();
  const bool sameWidth = g.stride == 1 && ow == g.width;
  for (int c = 0; c < g.channels; ++c) {
    for (int ki = 0; ki < g.kernelH; ++ki) {
      const Span ys = validSpan(ki - g.pad, g.height, g.stride, oh);
      for (int kj = 0; kj < g.kernelW; ++kj) {
        float* out = col + ((int64_t{c} * g.kernelH + ki) * g.kernelW + kj) * cols;
        // Output columns whose input column ix = ox*stride - pad + kj lies inside the image.
        const int shift = kj - g.pad;
        const Span xs = validSpan(shift, g.width, g.stride, ow);
        for (int n = 0; n < g.batch; ++n) {
          const float* plane = image + (int64_t{n} * g.channels + c) * g.height * g.width;
          if (sameWidth) {
            lowerSameWidth(g, plane, ki, ys, xs, shift, out + n * ohw);
          } else {
            lowerRows(g, plane, ki, xs, shift, out + n * ohw);
          }
        }
      }
    }
  }
}

void col2im(const ConvGeometry& g, const float* col, float* image) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t ohw = int64_t{oh} * ow;
  const int64_t cols = g.colCols();
  std::fill(image, image + int64_t{g.batch} * g.channels * g.height * g.width, 0.f);
  for (int c = 0; c < g.channels; ++c) {
    for (int ki = 0; ki < g.kernelH; ++ki) {
      for (int kj = 0; kj < g.kernelW; ++kj) {
        const float* in = col + ((int64_t{c} * g.kernelH + ki) * g.kernelW + kj) * cols;
        const int shift = kj - g.pad;
        const Span xs = validSpan(shift, g.width, g.stride, ow);
        for (int n = 0; n < g.batch; ++n) {
          float* plane = image + (int64_t{n} * g.channels + c) * g.height * g.width;
          const float* src = in + n * ohw;
          for (int oy = 0; oy < oh; ++oy) {
            const int iy = oy * g.stride - g.pad + ki;
            if (iy < 0 || iy >= g.height) continue;
            float* dst = plane + int64_t{iy} * g.width + shift;
            const float* row = src + int64_t{oy} * ow;
            if (g.stride == 1) {
              for (int ox = xs.begin; ox < xs.end; ++ox) dst[ox] += row[ox];
            } else {
              for (int ox = xs.begin; ox < xs.end; ++ox) dst[ox * g.stride] += row[ox];
            }
          }
        }
      }
    }
  }
}

void swapLeadingDims(const float* x, int a, int b, int64_t p, float* y) {
  for (int i = 0; i < a; ++i) {
    for (int j = 0; j < b; ++j) {
      std::memcpy(y + (int64_t{j} * a + i) * p, x + (int64_t{i} * b + j) * p, p * sizeof(float));
    }
  }
}

void maxPoolForward(const ConvGeometry& g, const float* x, float* y, int32_t* argmax) {
  const int oh = g.outHeight(), ow = g.outWidth();
  const int64_t planes = int64_t{g.batch} * g.channels;
  const int64_t hw = int64_t{g.height} * g.width;
  const bool twoByTwo = g.kernelH == 2 && g.kernelW == 2 && g.stride == 2;
  const int width = g.width;  // a local: the stores below could alias g
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* in = x + pl * hw;
    float* out = y + pl * oh * ow;
    int32_t* am = argmax + pl * oh * ow;
    for (int oy = 0; oy < oh; ++oy) {
      if (twoByTwo) {
        // The common case, unrolled; ties keep the first element in row-major order.
        const float* r0 = in + (2 * oy) * g.width;
        const float* r1 = r0 + g.width;
        const int32_t base = 2 * oy * g.width;
        for (int ox = 0; ox < ow; ++ox) {
          // Branch-free (pooled inputs have random signs, branches would mispredict): the
          // choices are integers and std::max, which compile to selects, not jumps.
          const int j = 2 * ox;
          const float a = r0[j], b = r0[j + 1], c = r1[j], d = r1[j + 1];
          const int32_t topRight = b > a, bottomRight = d > c;
          const float top = std::max(a, b), bottom = std::max(c, d);
          const int32_t useBottom = bottom > top;
          out[oy * ow + ox] = std::max(top, bottom);
          am[oy * ow + ox] = base + j + topRight + useBottom * (width + bottomRight - topRight);
        }
        continue;
      }
      for (int ox = 0; ox < ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int32_t bestIdx = (oy * g.stride) * g.width + ox * g.stride;
        for (int ki = 0; ki < g.kernelH; ++ki) {
          const int iy = oy * g.stride + ki;
          for (int kj = 0; kj < g.kernelW; ++kj) {
            const int idx = iy * g.width + ox * g.stride + kj;
            if (in[idx] > best) {
              best = in[idx];
              bestIdx = idx;
            }
          }
        }
        out[oy * ow + ox] = best;
        am[oy * ow + ox] = bestIdx;
      }
    }
  }
}

void maxPoolBackward(const ConvGeometry& g, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t ohw = int64_t{g.outHeight()} * g.outWidth();
  const int64_t planes = int64_t{g.batch} * g.channels;
  const int64_t hw = int64_t{g.height} * g.width;
  std::fill(dx, dx + planes * hw, 0.f);
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t o = 0; o < ohw; ++o) dx[pl * hw + argmax[pl * ohw + o]] += dy[pl * ohw + o];
  }
}

}  // namespace ddp::kernels::cpu
