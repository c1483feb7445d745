// validateModelStack(): the checks of a declared layer stack (Note [Declared layer stacks] in
// layer_spec.h) and of spec.loss, part of JobSpec::validate(). Every layer's parameters against
// the field table's ranges, each error naming the layer's path; then, when the dataset's sample
// shape is known here, the shapes layer by layer and the outputs against the targets.
#include <cmath>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp {
namespace {

// The value of a layer's parameter `key`, as the table reads it.
double paramValue(const LayerSpec& l, const std::string& key) {
  if (key == "out") return static_cast<double>(l.out);
  if (key == "kernel") return l.kernel;
  if (key == "stride") return l.stride;
  if (key == "padding") return l.padding;
  if (key == "p") return l.p;
  if (key == "eps") return l.eps;
  return 0;
}

// Parameters out of range (stride 0 reads as its default); true when none is.
bool checkLayerParams(const std::vector<LayerSpec>& layers, const std::string& path, bool inner,
                      std::vector<SpecError>* out) {
  bool ok = true;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    const std::string at = path + "[" + std::to_string(i) + "]." + layerKindName(l.kind);
    if (l.kind == LayerKind::kResidual) {
      if (inner) {
        out->push_back({at, "residual blocks do not nest"});
        ok = false;
        continue;
      }
      ok = checkLayerParams(l.layers, at + ".layers", true, out) && ok;
      continue;
    }
    for (const SpecField* f : jobSpecChildren(at)) {
      const std::string key(f->path.substr(f->path.find_last_of('.') + 1));
      const double v = paramValue(l, key);
      if (key == "stride" && v == 0) continue;
      std::string e = std::isfinite(v) ? specRangeError(*f, v) : "must be a finite number";
      if (!e.empty()) {
        out->push_back({at + "." + key, e});
        ok = false;
      }
    }
  }
  return ok;
}

// What the final layer must give: the classes of a cross-entropy, or the float targets of mse.
void checkOutputs(const JobSpec& s, const std::vector<int64_t>& output, std::vector<SpecError>* out) {
  if (s.loss != LossType::kCrossEntropy) return;
  if (output.size() != 1) {
    out->push_back({"spec.model.stack", "ends in " + shapeText(output) +
                                            "; crossEntropy needs flat [classes] logits (end with flatten or linear)"});
    return;
  }
  const int64_t classes = s.data.dataset == DatasetKind::kSynthetic ? s.data.synthetic.classes : 10;
  if (output[0] != classes) {
    out->push_back({"spec.model.stack", "ends in " + shapeText(output) + " logits but the dataset has " +
                                            std::to_string(classes) + " classes (the last layer's out)"});
  }
}

// The datasets whose samples may carry float targets (regression): npy, whose targets array's
// dtype tells (checked against spec.loss by the controller's data checks and by the worker), and
// csv, whose target column is read as floats under mse.
bool hasFloatTargets(const JobSpec& s) {
  return s.data.dataset == DatasetKind::kNpy || s.data.dataset == DatasetKind::kCsv;
}

}  // namespace

std::optional<std::vector<int64_t>> datasetSampleShape(const JobSpec& s) {
  switch (s.data.dataset) {
    case DatasetKind::kFashionMnist: return std::vector<int64_t>{1, 28, 28};
    case DatasetKind::kSynthetic: return std::vector<int64_t>{s.data.synthetic.features};
    default: return std::nullopt;
  }
}

void validateModelStack(const JobSpec& s, std::vector<SpecError>* errors) {
  const bool sequential = s.model.type == ModelType::kSequential;
  if (s.model.type == ModelType::kGpt && s.loss != LossType::kCrossEntropy) {
    errors->push_back({"spec.loss", "a gpt trains on token cross-entropy (crossEntropy only)"});
  }
  if (s.loss == LossType::kMse && !hasFloatTargets(s)) {
    errors->push_back({"spec.loss", std::string("mse needs float targets (an npy targets array of '<f4' or "
                                                    "'<f8', or a csv target column); dataset ") +
                                        datasetKindName(s.data.dataset) + " has class labels"});
  }
  if (!sequential) {
    if (!s.model.stack.empty()) {
      errors->push_back({"spec.model.stack", "only valid when spec.model.type is sequential"});
    }
    return;
  }
  if (!checkLayerParams(s.model.stack, "spec.model.stack", false, errors)) return;
  const std::optional<std::vector<int64_t>> input = datasetSampleShape(s);
  if (!input) {
    if (s.model.stack.empty()) errors->push_back({"spec.model.stack", "must hold at least one layer"});
    return;  // the worker checks the shapes once it has read the data
  }
  if (s.data.dataset == DatasetKind::kSynthetic && s.data.synthetic.features < 1) return;  // reported already
  const StackShapes shapes = inferStackShapes(s.model.stack, *input);
  if (!shapes.ok()) {
    errors->push_back({shapes.errorPath, shapes.error});
    return;
  }
  checkOutputs(s, shapes.output(), errors);
}

}  // namespace ddp
