// spec.model.stack (Note [Declared layer stacks] in layer_spec.h): read and written by the field
// table's list hooks (job_spec_fields_stack.cc). Each item is a mapping with one key, the layer's
// kind, checked against the table's "<list>[]" entries; its parameters against
// "<list>[].<kind>". Ranges are checked by validate() (job_spec_validate_model.cc).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/jobspec/job_spec_parser.h"

namespace ddp::job_spec_detail {

constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();

void parseLayerList(Parser& parser, const YAML::Node& n, const std::string& path, std::vector<LayerSpec>* out);

// The parameters of one layer (`v`, a mapping already checked against the table at `at`).
void parseLayerParams(Parser& parser, const YAML::Node& v, const std::string& at, LayerSpec* l) {
  for (const SpecField* f : jobSpecChildren(at)) {
    const std::string key(f->path.substr(f->path.find_last_of('.') + 1));
    const std::string kp = at + "." + key;
    const YAML::Node x = v[key];
    if (!x) {
      if (f->required) parser.fail(v, kp, "required field is missing");
      continue;
    }
    int64_t i = 0;
    if (key == "out") {
      if (parser.readInt(x, kp, &i, 0, std::numeric_limits<int64_t>::max())) l->out = i;
    } else if (key == "kernel" || key == "stride" || key == "padding") {
      if (parser.readInt(x, kp, &i, kIntMin, kIntMax)) {
        (key == "kernel" ? l->kernel : key == "stride" ? l->stride : l->padding) = static_cast<int>(i);
      }
    } else if (key == "p") {
      parser.readDouble(x, kp, &l->p);
    } else if (key == "eps") {
      parser.readDouble(x, kp, &l->eps);
    } else if (key == "layers") {
      parseLayerList(parser, x, kp, &l->layers);
    }
  }
}

void parseLayerList(Parser& parser, const YAML::Node& n, const std::string& path, std::vector<LayerSpec>* out) {
  if (!n.IsSequence()) {
    parser.fail(n, path, "expected a sequence of layers, each {kind: {parameters}}, got " + describe(n));
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string ip = path + "[" + std::to_string(i) + "]";
    const YAML::Node item = n[i];
    if (!parser.mapping(item, ip)) continue;  // unknown kinds are reported there
    if (item.size() != 1) {
      parser.fail(item, ip, "a layer is a mapping with one key, its kind (got " + std::to_string(item.size()) +
                                " keys)");
      continue;
    }
    const std::string key = item.begin()->first.Scalar();
    LayerSpec l;
    if (!parseLayerKind(key, &l.kind)) continue;
    const std::string at = ip + "." + key;
    const YAML::Node v = item.begin()->second;
    // `- relu:` (null) reads as `- relu: {}`.
    if (!v.IsNull()) {
      if (!parser.mapping(v, at)) continue;
      parseLayerParams(parser, v, at, &l);
    } else if (!jobSpecChildren(at).empty()) {
      parseLayerParams(parser, YAML::Node(YAML::NodeType::Map), at, &l);
    }
    out->push_back(std::move(l));
  }
}

// Top level a block sequence of flow mappings ("- {conv2d: {out: 8, kernel: 3, padding: 1}}"); a
// residual block's layers are a flow sequence inside its mapping.
void emitLayerList(YAML::Emitter& out, const std::vector<LayerSpec>& layers, bool flow) {
  if (flow) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const LayerSpec& l : layers) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << layerKindName(l.kind) << YAML::Value << YAML::Flow
        << YAML::BeginMap;
    switch (l.kind) {
      case LayerKind::kLinear:
        out << YAML::Key << "out" << YAML::Value << l.out;
        break;
      case LayerKind::kConv2d:
        out << YAML::Key << "out" << YAML::Value << l.out << YAML::Key << "kernel" << YAML::Value << l.kernel;
        if (l.stride != 0) out << YAML::Key << "stride" << YAML::Value << l.stride;
        out << YAML::Key << "padding" << YAML::Value << l.padding;
        break;
      case LayerKind::kMaxPool2d:
      case LayerKind::kAvgPool2d:
        out << YAML::Key << "kernel" << YAML::Value << l.kernel;
        if (l.stride != 0) out << YAML::Key << "stride" << YAML::Value << l.stride;
        break;
      case LayerKind::kLayerNorm:
        out << YAML::Key << "eps" << YAML::Value << specNumberText(l.eps);
        break;
      case LayerKind::kDropout:
        out << YAML::Key << "p" << YAML::Value << specNumberText(l.p);
        break;
      case LayerKind::kResidual:
        out << YAML::Key << "layers" << YAML::Value;
        emitLayerList(out, l.layers, true);
        break;
      default:
        break;
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace ddp::job_spec_detail

namespace ddp {

std::string layerStackYaml(const std::vector<LayerSpec>& layers) {
  YAML::Emitter out;
  job_spec_detail::emitLayerList(out, layers, true);
  return out.c_str();
}

bool parseLayerStackYaml(const std::string& yaml, const std::string& path, std::vector<LayerSpec>* out,
                         std::string* error) {
  job_spec_detail::Parser parser;
  try {
    // The field table knows the kinds under spec.model.stack: read there, reported at `path`.
    job_spec_detail::parseLayerList(parser, YAML::Load(yaml), "spec.model.stack", out);
  } catch (const YAML::Exception& e) {
    *error = path + ": " + e.what();
    return false;
  }
  if (parser.errors.empty()) return true;
  SpecError e = parser.errors.front();
  if (e.path.rfind("spec.model.stack", 0) == 0) e.path = path + e.path.substr(16);
  *error = e.path + ": " + e.message;
  return false;
}

}  // namespace ddp

namespace ddp::job_spec_detail {

void parseLayerStack(Parser& parser, const YAML::Node& n, JobSpec& spec) {
  parseLayerList(parser, n, "spec.model.stack", &spec.model.stack);
}

void emitLayerStack(YAML::Emitter& out, const JobSpec& spec) { emitLayerList(out, spec.model.stack, false); }

}  // namespace ddp::job_spec_detail
