#include "worker/training/model_description.h"

#include <yaml-cpp/yaml.h>

#include "worker/training/trainer_config.h"
#include "worker/training/training_setup.h"

namespace ddp::runtime {
namespace {

template <typename T>
std::vector<T> listOf(const YAML::Node& n) {
  std::vector<T> out;
  for (const auto& v : n) out.push_back(v.as<T>());
  return out;
}

kernels::Activation activationOf(const YAML::Node& n, const std::string& what) {
  kernels::Activation a = kernels::Activation::kRelu;
  if (n && !kernels::parseActivation(n.as<std::string>(), &a)) {
    throw YAML::Exception(n.Mark(), what + ": unknown activation '" + n.as<std::string>() + "'");
  }
  return a;
}

void emitGpt(YAML::Emitter& out, const model::GptConfig& g, bool byteText) {
  out << YAML::Key << "vocabSize" << YAML::Value << g.vocabSize << YAML::Key << "contextLength" << YAML::Value
      << g.contextLength << YAML::Key << "layers" << YAML::Value << g.layers << YAML::Key << "heads" << YAML::Value
      << g.heads << YAML::Key << "dModel" << YAML::Value << g.dModel << YAML::Key << "mlpHidden" << YAML::Value
      << g.hidden() << YAML::Key << "norm" << YAML::Value
      << (g.norm == model::GptNormKind::kRmsNorm ? "rmsnorm" : "layernorm") << YAML::Key << "normEps"
      << YAML::Value << g.normEps << YAML::Key << "rope" << YAML::Value << g.rope << YAML::Key << "ropeBase"
      << YAML::Value << g.ropeBase << YAML::Key << "tiedEmbeddings" << YAML::Value << g.tiedEmbeddings << YAML::Key
      << "tokens" << YAML::Value << (byteText ? "bytes" : "ids");
}

void parseGpt(const YAML::Node& n, ModelDescription* d) {
  model::GptConfig& g = d->gpt;
  g.vocabSize = n["vocabSize"].as<int>();
  g.contextLength = n["contextLength"].as<int>();
  g.layers = n["layers"].as<int>();
  g.heads = n["heads"].as<int>();
  g.dModel = n["dModel"].as<int>();
  g.mlpHidden = n["mlpHidden"].as<int>();
  g.norm = n["norm"].as<std::string>() == "rmsnorm" ? model::GptNormKind::kRmsNorm : model::GptNormKind::kLayerNorm;
  g.normEps = n["normEps"].as<float>();
  g.rope = n["rope"].as<bool>();
  g.ropeBase = n["ropeBase"].as<float>();
  g.tiedEmbeddings = n["tiedEmbeddings"].as<bool>();
  d->byteText = n["tokens"] && n["tokens"].as<std::string>() == "bytes";
}

}  // namespace

std::string ModelDescription::toYaml() const {
  YAML::Emitter out;
  out.SetFloatPrecision(9);  // floats read back bitwise
  out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << modelTypeName(type);
  if (type == ModelType::kMlp) {
    out << YAML::Key << "inputs" << YAML::Value << mlp.inputs << YAML::Key << "hidden" << YAML::Value << YAML::Flow
        << mlp.hidden << YAML::Key << "classes" << YAML::Value << mlp.classes << YAML::Key << "activation"
        << YAML::Value << kernels::activationName(mlp.activation);
  } else if (type == ModelType::kCnn) {
    out << YAML::Key << "input" << YAML::Value << YAML::Flow << cnn.input << YAML::Key << "convChannels"
        << YAML::Value << YAML::Flow << cnn.convChannels << YAML::Key << "kernelSize" << YAML::Value << cnn.kernel
        << YAML::Key << "hidden" << YAML::Value << YAML::Flow << cnn.hidden << YAML::Key << "classes" << YAML::Value
        << cnn.classes << YAML::Key << "activation" << YAML::Value << kernels::activationName(cnn.activation);
  } else if (type == ModelType::kSequential) {
    out << YAML::Key << "input" << YAML::Value << YAML::Flow << stackInput << YAML::Key << "stack" << YAML::Value
        << YAML::Load(layerStackYaml(stack));
  } else {
    emitGpt(out, gpt, byteText);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

ModelDescription describeModel(const TrainerConfig& c) {
  ModelDescription d;
  d.type = c.model;
  d.mlp = c.mlp;
  d.cnn = c.cnn;
  d.gpt = c.gpt;
  d.stack = c.stack;
  d.stackInput = c.stackInput;
  d.byteText = c.data == DatasetKind::kText;
  return d;
}

Result<ModelDescription> parseModelDescription(std::string_view yaml, const std::string& what) {
  ModelDescription d;
  try {
    const YAML::Node n = YAML::Load(std::string(yaml));
    const std::string type = n["type"].as<std::string>();
    if (type == "mlp") {
      d.type = ModelType::kMlp;
      d.mlp.inputs = n["inputs"].as<int64_t>();
      d.mlp.hidden = listOf<int64_t>(n["hidden"]);
      d.mlp.classes = n["classes"].as<int64_t>();
      d.mlp.activation = activationOf(n["activation"], what);
    } else if (type == "cnn") {
      d.type = ModelType::kCnn;
      d.cnn.input = listOf<int64_t>(n["input"]);
      d.cnn.convChannels = listOf<int>(n["convChannels"]);
      d.cnn.kernel = n["kernelSize"].as<int>();
      d.cnn.hidden = listOf<int64_t>(n["hidden"]);
      d.cnn.classes = n["classes"].as<int64_t>();
      d.cnn.activation = activationOf(n["activation"], what);
    } else if (type == "gpt") {
      d.type = ModelType::kGpt;
      parseGpt(n, &d);
    } else if (type == "sequential") {
      d.type = ModelType::kSequential;
      d.stackInput = listOf<int64_t>(n["input"]);
      std::string error;
      if (!parseLayerStackYaml(YAML::Dump(n["stack"]), what + ": stack", &d.stack, &error)) return invalidArgument(error);
    } else {
      return invalidArgument(what + ": model type '" + type + "' is not mlp, cnn, gpt or sequential");
    }
  } catch (const YAML::Exception& e) {
    return invalidArgument(what + ": not a model description: " + e.what());
  }
  return d;
}

Result<std::unique_ptr<model::TrainableModel>> buildDescribedModel(const ModelDescription& d, int cpuThreads) {
  TrainerConfig c;
  c.model = d.type;
  c.mlp = d.mlp;
  c.cnn = d.cnn;
  c.gpt = d.gpt;
  c.stack = d.stack;  // dropout is the identity outside training
  c.stackInput = d.stackInput;
  c.gpt.dropout = 0;
  c.gpt.precision = model::GptPrecision::kFp32;
  c.cpuThreads = cpuThreads;
  return buildModel(c);
}

}  // namespace ddp::runtime
