// Shape inference over a declared layer stack (Note [Declared layer stacks] in layer_spec.h).
#include "common/jobspec/layer_spec.h"

#include <utility>

namespace ddp {
namespace {

struct KindName {
  LayerKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {LayerKind::kLinear, "linear"},       {LayerKind::kConv2d, "conv2d"},   {LayerKind::kMaxPool2d, "maxpool2d"},
    {LayerKind::kAvgPool2d, "avgpool2d"}, {LayerKind::kFlatten, "flatten"}, {LayerKind::kLayerNorm, "layernorm"},
    {LayerKind::kDropout, "dropout"},     {LayerKind::kRelu, "relu"},       {LayerKind::kGelu, "gelu"},
    {LayerKind::kTanh, "tanh"},           {LayerKind::kSigmoid, "sigmoid"}, {LayerKind::kResidual, "residual"},
};

// Saturates above kMaxSampleElements (declared widths multiply past int64 otherwise).
int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d > 0 && n > kMaxSampleElements / d) return kMaxSampleElements + 1;
    n *= d;
  }
  return n;
}

// One layer's output shape for input `in`; sets *error (naming both shapes) when it cannot take it.
std::vector<int64_t> layerOutput(const LayerSpec& l, const std::vector<int64_t>& in, std::string* error) {
  const std::string got = shapeText(in);
  switch (l.kind) {
    case LayerKind::kLinear:
      if (in.size() != 1) {
        *error = "needs a flat [features] input, got " + got + " (add {flatten: {}} before it)";
        return {};
      }
      return {l.out};
    case LayerKind::kConv2d:
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d: {
      if (in.size() != 3) {
        *error = "needs a [channels, height, width] input, got " + got;
        return {};
      }
      const int64_t pad = l.kind == LayerKind::kConv2d ? l.padding : 0;
      const int64_t stride = effectiveStride(l);
      if (l.kernel < 1 || stride < 1 || in[1] + 2 * pad < l.kernel || in[2] + 2 * pad < l.kernel) {
        *error = "a " + std::to_string(l.kernel) + "x" + std::to_string(l.kernel) + " window (padding " +
                 std::to_string(pad) + ") does not fit the input " + got;
        return {};
      }
      const int64_t h = (in[1] + 2 * pad - l.kernel) / stride + 1, w = (in[2] + 2 * pad - l.kernel) / stride + 1;
      return {l.kind == LayerKind::kConv2d ? l.out : in[0], h, w};
    }
    case LayerKind::kFlatten:
      return {numel(in)};
    case LayerKind::kLayerNorm:
      if (in.size() != 1) {
        *error = "normalizes a flat [features] input, got " + got + " (add {flatten: {}} before it)";
        return {};
      }
      return in;
    case LayerKind::kResidual:  // inferStackShapes handles the block
    case LayerKind::kDropout:
    case LayerKind::kRelu:
    case LayerKind::kGelu:
    case LayerKind::kTanh:
    case LayerKind::kSigmoid:
      return in;
  }
  return in;
}

}  // namespace

const char* layerKindName(LayerKind k) {
  for (const KindName& n : kKindNames) {
    if (n.kind == k) return n.name;
  }
  return "?";
}

bool parseLayerKind(const std::string& name, LayerKind* out) {
  for (const KindName& n : kKindNames) {
    if (name == n.name) {
      *out = n.kind;
      return true;
    }
  }
  return false;
}

int effectiveStride(const LayerSpec& l) {
  if (l.stride > 0) return l.stride;
  return l.kind == LayerKind::kConv2d ? 1 : l.kernel;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

StackShapes inferStackShapes(const std::vector<LayerSpec>& layers, const std::vector<int64_t>& input,
                             const std::string& path) {
  StackShapes r;
  if (layers.empty()) {
    r.errorPath = path;
    r.error = "must hold at least one layer";
    return r;
  }
  std::vector<int64_t> shape = input;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    const std::string at = path + "[" + std::to_string(i) + "]." + layerKindName(l.kind);
    std::string error;
    std::vector<int64_t> next;
    if (l.kind == LayerKind::kResidual) {
      StackShapes inner = inferStackShapes(l.layers, shape, at + ".layers");
      if (!inner.ok()) return inner;
      if (inner.output() != shape) {
        error = "the block gives " + shapeText(inner.output()) + " but its input is " + shapeText(shape) +
                " (input + block(input) needs the same shape)";
      }
      next = shape;
    } else {
      next = layerOutput(l, shape, &error);
    }
    if (error.empty() && numel(next) > kMaxSampleElements) {
      error = "gives " + shapeText(next) + ", more than " + std::to_string(kMaxSampleElements) + " values per sample";
    }
    if (!error.empty()) {
      r.errorPath = at;
      r.error = error;
      r.outputs.clear();
      return r;
    }
    shape = std::move(next);
    r.outputs.push_back(shape);
  }
  return r;
}

}  // namespace ddp
