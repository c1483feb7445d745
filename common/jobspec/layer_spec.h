#pragma once
// LayerSpec: one entry of a declared layer stack (spec.model.stack, docs/MODELS.md), and the
// pure shape inference over a stack that the controller runs at submission and the worker before
// it builds the model (Note [Declared layer stacks]).
// Thread model: plain values and pure functions.
//
// Note [Declared layer stacks]
// `spec.model.type: sequential` trains the stack in spec.model.stack: a list of single-key
// objects, the key naming the layer kind and its value the layer's parameters
// ([{conv2d: {out: 8, kernel: 3}}, {relu: {}}, {flatten: {}}, {linear: {out: 10}}]). The
// per-sample input shape comes from the dataset ([1, 28, 28] for fashion-mnist, [features] for
// synthetic); every layer's output shape follows from its input shape and parameters
// (inferStackShapes), and a layer that cannot take its input is refused with its path
// ("spec.model.stack[3].linear") and both shapes. Linear and LayerNorm take a flat [features]
// input (a flatten turns [C, H, W] into it, as torch.nn.Sequential needs); conv2d and the pools
// take [C, H, W]. A residual block's layers must give back its input's shape: its output is
// input + block(input). Residual blocks do not nest (the CRD schema is structural: no
// recursion). Parameters are named and ordered as torch.nn.Sequential names the same model:
// "{index}.weight" with the index counting every entry of the stack, activations included,
// and "{index}.{inner}.weight" inside a residual block.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

// New values go at the end: the values are fed to trajectoryHash.
enum class LayerKind : uint8_t {
  kLinear = 0,
  kConv2d,
  kMaxPool2d,
  kAvgPool2d,
  kFlatten,
  kLayerNorm,
  kDropout,
  kRelu,
  kGelu,
  kTanh,
  kSigmoid,
  kResidual,
};

// The YAML key of a kind ("linear", "maxpool2d", ...); false / nullptr for an unknown one.
const char* layerKindName(LayerKind k);
bool parseLayerKind(const std::string& name, LayerKind* out);

struct LayerSpec {
  LayerKind kind = LayerKind::kRelu;
  int64_t out = 0;      // linear: output features; conv2d: output channels
  int kernel = 0;       // conv2d, maxpool2d, avgpool2d: the square window
  int stride = 0;       // conv2d: 0 reads as 1; pools: 0 reads as the kernel
  int padding = 0;      // conv2d: zero padding on every side
  double p = 0.5;       // dropout: the probability of zeroing an element
  double eps = 1e-5;    // layernorm
  std::vector<LayerSpec> layers;  // residual: the block
  bool operator==(const LayerSpec&) const = default;
};

// The stride a layer uses (conv2d: 1 when 0; pools: the kernel when 0).
int effectiveStride(const LayerSpec& l);

// Limits of a declared layer (checked by the field table and inferStackShapes).
inline constexpr int64_t kMaxLayerWidth = int64_t{1} << 24;  // linear.out, conv2d.out
inline constexpr int kMaxLayerKernel = 1024;
inline constexpr int64_t kMaxSampleElements = (int64_t{1} << 31) - 1;  // the kernels index with int

// The outcome of shape inference: the output shape of every top-level layer, or the first
// layer that cannot take its input (its path, "spec.model.stack[3].linear", and why, with both
// shapes).
struct StackShapes {
  std::vector<std::vector<int64_t>> outputs;
  std::string errorPath;
  std::string error;
  bool ok() const { return error.empty(); }
  const std::vector<int64_t>& output() const { return outputs.back(); }
};

// Infers the per-sample output shape of each layer of `layers` fed a per-sample `input`;
// `path` names the list in errors. An empty stack is an error.
StackShapes inferStackShapes(const std::vector<LayerSpec>& layers, const std::vector<int64_t>& input,
                             const std::string& path = "spec.model.stack");

// "[1, 28, 28]"
std::string shapeText(const std::vector<int64_t>& shape);

// A stack as the job document writes it, in flow style ("[{linear: {out: 10}}, {relu: {}}]"),
// and its inverse (what a checkpoint's model description keeps: job_spec_stack_yaml.cc). The
// parser reads along the field table, so it refuses what parseJobSpec refuses; errors name
// `path` and the layer ("<path>[1].linear.out: ...").
std::string layerStackYaml(const std::vector<LayerSpec>& layers);
bool parseLayerStackYaml(const std::string& yaml, const std::string& path, std::vector<LayerSpec>* out,
                         std::string* error);

}  // namespace ddp
