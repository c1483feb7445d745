// YAML -> JobSpec: the parser that collects every error with its field path and location.
// (The emitter, JobSpec::toYaml(), is in job_spec_emit.cc.)
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_json.h"
#include "common/jobspec/job_spec_parser.h"
#include "common/utf8.h"
#include "common/yaml_guard.h"

namespace ddp {
namespace {

using job_spec_detail::EnumTable;

const EnumTable<JobDevice> kDevices = {{"cpu", JobDevice::kCpu}, {"cuda", JobDevice::kCuda}};
const EnumTable<ModelType> kModels = {{"mlp", ModelType::kMlp}, {"cnn", ModelType::kCnn}};
const EnumTable<DatasetKind> kDatasets = {{"fashion-mnist", DatasetKind::kFashionMnist},
                                          {"synthetic", DatasetKind::kSynthetic}};
const EnumTable<OptimizerType> kOptimizers = {
    {"sgd", OptimizerType::kSgd}, {"adam", OptimizerType::kAdam}, {"adamw", OptimizerType::kAdamW}};
const EnumTable<ScheduleType> kSchedules = {{"constant", ScheduleType::kConstant},
                                            {"step", ScheduleType::kStep},
                                            {"cosine", ScheduleType::kCosine}};
const EnumTable<ZeroMode> kZero = {
    {"none", ZeroMode::kNone}, {"zero1", ZeroMode::kZero1}, {"dfa", ZeroMode::kDfa}};
const EnumTable<CommHookType> kHooks = {{"allreduce", CommHookType::kAllreduce},
                                        {"fp16", CommHookType::kFp16},
                                        {"bf16", CommHookType::kBf16},
                                        {"powerSGD", CommHookType::kPowerSgd},
                                        {"batchedPowerSGD", CommHookType::kBatchedPowerSgd},
                                        {"noop", CommHookType::kNoop}};
const EnumTable<HookWrapper> kWrappers = {
    {"none", HookWrapper::kNone}, {"fp16", HookWrapper::kFp16}, {"bf16", HookWrapper::kBf16}};
const EnumTable<MixedPrecision> kPrecisions = {
    {"none", MixedPrecision::kNone}, {"fp16", MixedPrecision::kFp16}, {"bf16", MixedPrecision::kBf16}};
const EnumTable<JobLogFormat> kLogFormats = {{"text", JobLogFormat::kText},
                                             {"json", JobLogFormat::kJson}};
const EnumTable<CommThreadPriority> kCommPriorities = {{"auto", CommThreadPriority::kAuto},
                                                      {"realtime", CommThreadPriority::kRealtime},
                                                      {"normal", CommThreadPriority::kNormal}};

}  // namespace

namespace job_spec_detail {

void Parser::parse(const YAML::Node& doc, JobSpec* spec) {
  if (!doc.IsDefined() || doc.IsNull()) {
    errors.push_back({"", "empty document (expected a DDPJob mapping)", 1, 1});
    return;
  }
  // `status` belongs to the controller (a DDPJob read back from the API server carries it):
  // accepted and ignored here.
  if (!mapping(doc, "")) return;
  if (required(doc, "", "apiVersion")) getString(doc, "", "apiVersion", &spec->apiVersion);
  if (required(doc, "", "kind")) getString(doc, "", "kind", &spec->kind);
  if (required(doc, "", "metadata")) parseMetadata(doc["metadata"], spec);
  if (required(doc, "", "spec")) parseSpec(doc["spec"], spec);
}

void Parser::parseMetadata(const YAML::Node& n, JobSpec* spec) {
  // Kubernetes ObjectMeta fields other than name and labels are accepted and ignored, so that
  // a DDPJob read back from the API server parses.
  if (!mapping(n, "metadata")) {
    return;
  }
  if (required(n, "metadata", "name")) getString(n, "metadata", "name", &spec->name);
  getStringMap(n, "metadata", "labels", &spec->labels);
}

void Parser::parseSpec(const YAML::Node& n, JobSpec* spec) {
  const std::string p = "spec";
  if (!mapping(n, p)) {
    return;
  }
  if (n["workers"] && mapping(n["workers"], "spec.workers")) {
    const YAML::Node& w = n["workers"];
    getInt(w, "spec.workers", "count", &spec->workers.count);
    spec->workers.min = spec->workers.max = spec->workers.count;
    getInt(w, "spec.workers", "min", &spec->workers.min);
    getInt(w, "spec.workers", "max", &spec->workers.max);
  }
  getEnum(n, p, "device", kDevices, &spec->device);
  getInt(n, p, "threadsPerWorker", &spec->threadsPerWorker);
  if (required(n, p, "model")) parseModel(n["model"], "spec.model", &spec->model);
  if (required(n, p, "data")) parseData(n["data"], "spec.data", &spec->data);
  if (n["optimizer"]) parseOptimizer(n["optimizer"], "spec.optimizer", &spec->optimizer);
  getEnum(n, p, "zero", kZero, &spec->zero);
  if (n["commHook"]) parseCommHook(n["commHook"], "spec.commHook", &spec->commHook);
  if (n["join"] && mapping(n["join"], "spec.join")) {
    getBool(n["join"], "spec.join", "enabled", &spec->join.enabled);
    getBool(n["join"], "spec.join", "throwOnEarlyTermination", &spec->join.throwOnEarlyTermination);
    getBool(n["join"], "spec.join", "divideByInitialWorldSize", &spec->join.divideByInitialWorldSize);
  }
  if (n["gradientAccumulation"] &&
      mapping(n["gradientAccumulation"], "spec.gradientAccumulation")) {
    getInt(n["gradientAccumulation"], "spec.gradientAccumulation", "steps",
           &spec->gradientAccumulationSteps);
  }
  getEnum(n, p, "mixedPrecision", kPrecisions, &spec->mixedPrecision);
  getInt(n, p, "epochs", &spec->epochs);
  getInt(n, p, "steps", &spec->steps);
  getSeed(n, p, "seed", &spec->seed);
  if (n["checkpoint"] && mapping(n["checkpoint"], "spec.checkpoint")) {
    getString(n["checkpoint"], "spec.checkpoint", "dir", &spec->checkpoint.dir);
    getInt(n["checkpoint"], "spec.checkpoint", "everySteps", &spec->checkpoint.everySteps);
    getInt(n["checkpoint"], "spec.checkpoint", "keep", &spec->checkpoint.keep);
  }
  if (n["eval"] && mapping(n["eval"], "spec.eval")) {
    getBool(n["eval"], "spec.eval", "everyEpoch", &spec->eval.everyEpoch);
    getInt(n["eval"], "spec.eval", "batchSize", &spec->eval.batchSize);
    getInt(n["eval"], "spec.eval", "limit", &spec->eval.limit);
  }
  getDouble(n, p, "bucketCapMb", &spec->bucketCapMb);
  getDouble(n, p, "firstBucketMb", &spec->firstBucketMb);
  getBool(n, p, "gradientAsBucketView", &spec->gradientAsBucketView);
  getInt(n, p, "maxRestarts", &spec->maxRestarts);
  if (n["timeouts"]) parseTimeouts(n["timeouts"], "spec.timeouts", &spec->timeouts);
  if (n["elastic"] && mapping(n["elastic"], "spec.elastic")) {
    getBool(n["elastic"], "spec.elastic", "keepGlobalBatch", &spec->elastic.keepGlobalBatch);
  }
  getEnum(n, p, "logFormat", kLogFormats, &spec->logFormat);
  getEnum(n, p, "commThreadPriority", kCommPriorities, &spec->commThreadPriority);
  if (n["kubernetes"]) parseKubernetes(n["kubernetes"], "spec.kubernetes", &spec->kubernetes);
}

void Parser::parseModel(const YAML::Node& n, const std::string& p, ModelSpec* model) {
  if (!mapping(n, p)) return;
  if (required(n, p, "type")) getEnum(n, p, "type", kModels, &model->type);
  const bool cnn = model->type == ModelType::kCnn;
  if (cnn) model->hidden = kCnnDefaultHidden;
  getIntList(n, p, "hidden", &model->hidden);
  getString(n, p, "activation", &model->activation);
  onlyWhen(n, p, "convChannels", cnn, "spec.model.type is cnn");
  onlyWhen(n, p, "kernelSize", cnn, "spec.model.type is cnn");
  getIntList(n, p, "convChannels", &model->convChannels);
  getInt(n, p, "kernelSize", &model->kernelSize);
}

void Parser::parseData(const YAML::Node& n, const std::string& p, DataSpec* data) {
  if (!mapping(n, p)) {
    return;
  }
  if (required(n, p, "dataset")) getEnum(n, p, "dataset", kDatasets, &data->dataset);
  getString(n, p, "dir", &data->dir);
  getInt(n, p, "batchSize", &data->batchSize);
  getInt(n, p, "globalBatchSize", &data->globalBatchSize);
  getBool(n, p, "shuffle", &data->shuffle);
  getBool(n, p, "dropLast", &data->dropLast);
  getBool(n, p, "normalize", &data->normalize);
  getInt(n, p, "limit", &data->limit);
  if (n["uneven"] && mapping(n["uneven"], p + ".uneven")) {
    getBool(n["uneven"], p + ".uneven", "enabled", &data->uneven.enabled);
    getIntList(n["uneven"], p + ".uneven", "counts", &data->uneven.counts);
  }
  const bool synthetic = data->dataset == DatasetKind::kSynthetic;
  onlyWhen(n, p, "synthetic", synthetic, "spec.data.dataset is synthetic");
  onlyWhen(n, p, "dir", !synthetic, "spec.data.dataset is fashion-mnist");
  const std::string sp = p + ".synthetic";
  if (synthetic && n["synthetic"] &&
      mapping(n["synthetic"], sp)) {
    const YAML::Node& s = n["synthetic"];
    getInt(s, sp, "samples", &data->synthetic.samples);
    getInt(s, sp, "features", &data->synthetic.features);
    getInt(s, sp, "classes", &data->synthetic.classes);
    getDouble(s, sp, "separation", &data->synthetic.separation);
    getDouble(s, sp, "noise", &data->synthetic.noise);
  }
}

void Parser::parseOptimizer(const YAML::Node& n, const std::string& p, OptimizerSpec* o) {
  if (!mapping(n, p)) {
    return;
  }
  getEnum(n, p, "type", kOptimizers, &o->type);
  getDouble(n, p, "lr", &o->lr);
  getDouble(n, p, "weightDecay", &o->weightDecay);
  getDouble(n, p, "momentum", &o->momentum);
  getDouble(n, p, "dampening", &o->dampening);
  getBool(n, p, "nesterov", &o->nesterov);
  const bool adam = o->type != OptimizerType::kSgd;
  onlyWhen(n, p, "betas", adam, "spec.optimizer.type is adam or adamw");
  onlyWhen(n, p, "eps", adam, "spec.optimizer.type is adam or adamw");
  if (n["betas"]) {
    const YAML::Node& b = n["betas"];
    if (!b.IsSequence() || b.size() != 2) {
      fail(b, p + ".betas", "expected a sequence of two numbers [beta1, beta2], got " + describe(b));
    } else {
      readDouble(b[0], p + ".betas[0]", &o->beta1);
      readDouble(b[1], p + ".betas[1]", &o->beta2);
    }
  }
  getDouble(n, p, "eps", &o->eps);
  getDouble(n, p, "maxGradNorm", &o->maxGradNorm);
  const std::string sp = p + ".schedule";
  if (n["schedule"] &&
      mapping(n["schedule"], sp)) {
    const YAML::Node& s = n["schedule"];
    getEnum(s, sp, "type", kSchedules, &o->schedule.type);
    getInt(s, sp, "warmupSteps", &o->schedule.warmupSteps);
    onlyWhen(s, sp, "stepSize", o->schedule.type == ScheduleType::kStep, "schedule type is step");
    onlyWhen(s, sp, "gamma", o->schedule.type == ScheduleType::kStep, "schedule type is step");
    onlyWhen(s, sp, "minLr", o->schedule.type == ScheduleType::kCosine, "schedule type is cosine");
    getInt(s, sp, "stepSize", &o->schedule.stepSize);
    getDouble(s, sp, "gamma", &o->schedule.gamma);
    getDouble(s, sp, "minLr", &o->schedule.minLr);
  }
}

void Parser::parseCommHook(const YAML::Node& n, const std::string& p, CommHookSpec* h) {
  if (!mapping(n, p)) return;
  getEnum(n, p, "type", kHooks, &h->type);
  getEnum(n, p, "wrapper", kWrappers, &h->wrapper);
  const bool powerSgd =
      h->type == CommHookType::kPowerSgd || h->type == CommHookType::kBatchedPowerSgd;
  onlyWhen(n, p, "powerSGD", powerSgd, "spec.commHook.type is powerSGD or batchedPowerSGD");
  const std::string sp = p + ".powerSGD";
  if (powerSgd && n["powerSGD"] &&
      mapping(n["powerSGD"], sp)) {
    const YAML::Node& s = n["powerSGD"];
    getInt(s, sp, "rank", &h->powerSGD.rank);
    getInt(s, sp, "startIter", &h->powerSGD.startIter);
    getDouble(s, sp, "minCompressionRate", &h->powerSGD.minCompressionRate);
    getBool(s, sp, "errorFeedback", &h->powerSGD.errorFeedback);
    getBool(s, sp, "warmStart", &h->powerSGD.warmStart);
    getDouble(s, sp, "orthogonalizationEpsilon", &h->powerSGD.orthogonalizationEpsilon);
    getSeed(s, sp, "seed", &h->powerSGD.seed);
    getBool(s, sp, "batchTensorsWithSameShape", &h->powerSGD.batchTensorsWithSameShape);
  }
}

void Parser::parseTimeouts(const YAML::Node& n, const std::string& p, TimeoutsSpec* t) {
  if (!mapping(n, p)) {
    return;
  }
  getDouble(n, p, "heartbeatSeconds", &t->heartbeatSeconds);
  getInt(n, p, "heartbeatMisses", &t->heartbeatMisses);
  getDouble(n, p, "lastCallSeconds", &t->lastCallSeconds);
  getDouble(n, p, "hangSeconds", &t->hangSeconds);
  getDouble(n, p, "progressSeconds", &t->progressSeconds);
  getDouble(n, p, "controllerSeconds", &t->controllerSeconds);
  getDouble(n, p, "collectiveSeconds", &t->collectiveSeconds);
  getDouble(n, p, "rendezvousSeconds", &t->rendezvousSeconds);
}

}  // namespace job_spec_detail

namespace {

// True when `a` equals `b` or one is a path prefix of the other ("x.y" vs "x.y.z" / "x.y[0]").
bool overlaps(const std::string& a, const std::string& b) {
  const std::string& s = a.size() <= b.size() ? a : b;
  const std::string& l = a.size() <= b.size() ? b : a;
  if (l.compare(0, s.size(), s) != 0) return false;
  return l.size() == s.size() || l[s.size()] == '.' || l[s.size()] == '[';
}

// The document-level refusals made before YAML reads the text: a control character (YAML allows
// none but tab, LF and CR, and no DEL; leading NULs also make yaml-cpp read the text as UTF-32,
// whose decoding yields strings that are not UTF-8), invalid UTF-8 (Note [Invalid UTF-8]), and
// anchors, aliases or deep nesting (Note [YAML guard]).
std::optional<SpecError> documentShapeError(std::string_view yaml) {
  const size_t control = std::find_if(yaml.begin(), yaml.end(), [](char ch) {
                           const auto c = static_cast<unsigned char>(ch);
                           return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
                         }) - yaml.begin();
  if (control < yaml.size()) {
    const TextPosition at = textPosition(yaml, control);
    char code[8];
    std::snprintf(code, sizeof code, "0x%02X", static_cast<unsigned char>(yaml[control]));
    return SpecError{"", "the job document holds a control character (" + std::string(code) + ") at byte " +
                             std::to_string(control) + ", which YAML does not allow",
                     at.line, at.column};
  }
  if (const size_t bad = invalidUtf8Offset(yaml); bad != std::string_view::npos) {
    const TextPosition at = textPosition(yaml, bad);
    return SpecError{"", "the job document is not valid UTF-8: " + describeInvalidUtf8(yaml, bad), at.line,
                     at.column};
  }
  if (const YamlGuardError shape = checkYamlShape(yaml); !shape.message.empty()) {
    return SpecError{"", shape.message, shape.line, shape.column};
  }
  return std::nullopt;
}

}  // namespace

Result<JobSpec> parseJobSpec(std::string_view yaml, std::vector<SpecError>* errorsOut) {
  job_spec_detail::Parser parser;
  JobSpec spec;
  spec.apiVersion.clear();
  spec.kind.clear();
  std::vector<JsonColumnShift> shifts;  // Note [JSON job documents]
  if (auto bad = documentShapeError(yaml)) {
    parser.errors.push_back(std::move(*bad));
    if (errorsOut) *errorsOut = parser.errors;
    return specErrorsToStatus(parser.errors);
  }
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(rewriteJsonSurrogatePairs(yaml, &shifts));
    // A trailing "---" yields an empty document: only documents with content count.
    docs.erase(std::remove_if(docs.begin(), docs.end(), [](const YAML::Node& d) { return d.IsNull(); }),
               docs.end());
    if (docs.size() > 1) {
      const YAML::Mark at = docs[1].Mark();
      parser.errors.push_back({"", "the body holds " + std::to_string(docs.size()) +
                                       " YAML documents; submit one job per document (the second starts here)",
                               at.line + 1, at.column + 1});
    } else {
      parser.parse(docs.empty() ? YAML::Node() : docs[0], &spec);
    }
  } catch (const YAML::Exception& e) {
    parser.errors.push_back({"", "YAML syntax error: " + e.msg, e.mark.line + 1, e.mark.column + 1});
  }
  if (!shifts.empty()) {
    for (SpecError& e : parser.errors) e.column = originalColumn(shifts, e.line, e.column);
    for (auto& [path, at] : parser.marks) at.second = originalColumn(shifts, at.first, at.second);
  }
  // A document-level error (syntax, empty, not a mapping) leaves nothing worth validating.
  const bool documentError = std::any_of(parser.errors.begin(), parser.errors.end(),
                                         [](const SpecError& e) { return e.path.empty(); });
  std::vector<SpecError> all = parser.errors;
  if (!documentError) {
    std::vector<SpecError> semantic;
    (void)spec.validate(&semantic);
    for (SpecError& e : semantic) {
      // A field that failed to parse kept its default: its follow-on errors would mislead.
      if (std::any_of(parser.errors.begin(), parser.errors.end(),
                      [&](const SpecError& pe) { return overlaps(pe.path, e.path); })) {
        continue;
      }
      // Locate at the field, or at the closest enclosing field present in the document.
      for (std::string p = e.path; !p.empty();) {
        auto it = parser.marks.find(p);
        if (it != parser.marks.end()) {
          e.line = it->second.first;
          e.column = it->second.second;
          break;
        }
        size_t cut = p.find_last_of(".[");
        p = cut == std::string::npos ? "" : p.substr(0, cut);
      }
      all.push_back(std::move(e));
    }
  }
  if (errorsOut) *errorsOut = all;
  if (!all.empty()) return specErrorsToStatus(all);
  return spec;
}

}  // namespace ddp
