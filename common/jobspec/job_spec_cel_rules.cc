// The CRD's admission rules (job_spec_cel_rules.h; Note [CRD admission rules]).
#include "common/jobspec/job_spec_cel_rules.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <variant>

#include "common/jobspec/job_names.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_fields.h"

namespace ddp {
namespace {

[[noreturn]] void badRule(std::string_view what, std::string_view path) {
  std::fprintf(stderr, "job_spec_cel_rules: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(path.size()), path.data());
  std::abort();
}

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// `value in ['a', 'b']`
std::string in(const std::string& value, std::initializer_list<std::string_view> spellings) {
  std::string list;
  for (std::string_view s : spellings) list += (list.empty() ? "" : ", ") + quote(s);
  return value + " in [" + list + "]";
}

// A default as a CEL literal of the field's schema type (a number field's as a double).
std::string literal(const SpecValue& v, std::string_view path) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return quote(*s);
  if (const auto* d = std::get_if<double>(&v)) {
    std::string t = specNumberText(*d);
    if (t.find_first_of(".eE") == std::string::npos) t += ".0";
    return t;
  }
  badRule("no constant scalar default", path);
}

std::vector<SpecCelRule> documentRules() {
  const std::string max = std::to_string(kMaxJobNameLength);  // Note [Job names]
  return {
      {"name-dns-1035", "", "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
       "metadata.name must start with a letter and hold only a-z, 0-9 and '-', ending with a letter or "
       "digit (a DNS-1035 label: the job's headless Service is named after the job)",
       ".metadata.name"},
      {"name-length", "", "self.metadata.name.size() <= " + max,
       "metadata.name must be at most " + max + " characters: the worker pods are named <name>-worker-<slot> "
       "(slot up to " + std::to_string(kMaxWorkersPerJob - 1) + ") and a pod's name is its hostname, a DNS "
       "label of at most 63 characters",
       ".metadata.name"},
  };
}

std::vector<SpecCelRule> workerRules() {
  const CelScope w("spec.workers");
  const std::string count = w.value("spec.workers.count");
  const std::string min = w.valueOr("spec.workers.min", count);
  const std::string max = w.valueOr("spec.workers.max", count);
  const std::string perPod = w.value("spec.workers.perPod");
  return {
      {"workers-min-max", "spec.workers", min + " <= " + max,
       "spec.workers.min must be <= spec.workers.max (each defaults to spec.workers.count)", ".min"},
      {"workers-count-range", "spec.workers", min + " <= " + count + " && " + count + " <= " + max,
       "spec.workers.count must lie within [spec.workers.min, spec.workers.max]", ".count"},
      {"workers-whole-pods", "spec.workers",
       count + " % " + perPod + " == 0 && " + min + " % " + perPod + " == 0 && " + max + " % " + perPod + " == 0",
       "spec.workers.count, min and max must be multiples of spec.workers.perPod (a pod is the unit of launch "
       "and replacement)",
       ".perPod"},
  };
}

std::vector<SpecCelRule> trainingRules() {
  const CelScope s("spec");
  const std::string model = s.value("spec.model.type"), dataset = s.value("spec.data.dataset");
  const std::string epochs = s.value("spec.epochs"), steps = s.value("spec.steps");
  const std::string uneven = s.value("spec.data.uneven.enabled"), join = s.value("spec.join.enabled");
  const std::string vocab = s.value("spec.model.vocabSize");
  return {
      {"epochs-or-steps", "spec", "(" + epochs + " > 0) != (" + steps + " > 0)",
       "set exactly one of spec.epochs and spec.steps (> 0)", ".epochs"},
      {"language-model-steps", "spec", model + " != 'gpt' || " + steps + " > 0",
       "language models train by steps: set spec.steps (not spec.epochs) for model type gpt", ".steps"},
      {"language-model-data", "spec", "(" + model + " == 'gpt') == (" + in(dataset, {"tokens", "text"}) + ")",
       "spec.data.dataset tokens or text goes with spec.model.type gpt, and gpt with tokens or text",
       ".data.dataset"},
      {"precision-gpt", "spec", s.value("spec.precision") + " == 'fp32' || " + model + " == 'gpt'",
       "spec.precision bf16 applies to model type gpt only", ".precision"},
      {"cnn-features", "spec",
       model + " != 'cnn' || " + dataset + " != 'synthetic' || " + s.value("spec.data.synthetic.features") +
           " == 784",
       "spec.data.synthetic.features must be 784 for model type cnn, which takes 1x28x28 images",
       ".data.synthetic.features"},
      {"tokens-vocab", "spec", dataset + " != 'tokens' || " + vocab + " >= 2",
       "spec.model.vocabSize is required for dataset tokens (>= 2): token files do not say it",
       ".model.vocabSize"},
      {"text-vocab", "spec", dataset + " != 'text' || " + vocab + " == 0 || " + vocab + " >= 256",
       "spec.model.vocabSize must be 0 or >= 256 for dataset text (bytes are tokens 0-255)", ".model.vocabSize"},
      {"uneven-join", "spec", "!" + uneven + " || " + join,
       "spec.data.uneven.enabled requires spec.join.enabled: true", ".data.uneven.enabled"},
      {"uneven-drop-last", "spec", "!" + uneven + " || !" + s.value("spec.data.dropLast"),
       "spec.data.dropLast cannot be true with spec.data.uneven.enabled", ".data.dropLast"},
      {"uneven-global-batch", "spec", s.value("spec.data.globalBatchSize") + " == 0 || !" + uneven,
       "spec.data.globalBatchSize is not supported with spec.data.uneven", ".data.globalBatchSize"},
  };
}

std::vector<SpecCelRule> communicationRules() {
  const CelScope s("spec");
  const std::string device = s.value("spec.device"), zero = s.value("spec.zero");
  const std::string hook = s.value("spec.commHook.type"), wrapper = s.value("spec.commHook.wrapper");
  const std::string join = s.value("spec.join.enabled"), mixed = s.value("spec.mixedPrecision");
  const std::string powerSgd = in(hook, {"powerSGD", "batchedPowerSGD"});
  return {
      {"hook-noop", "spec", hook + " != 'noop'",
       "spec.commHook.type noop is for debugging only and refused in a job (use allreduce)", ".commHook.type"},
      {"hook-wrapper", "spec", wrapper + " == 'none' || " + in(hook, {"allreduce", "powerSGD", "batchedPowerSGD"}),
       "spec.commHook.wrapper applies to allreduce, powerSGD or batchedPowerSGD", ".commHook.wrapper"},
      {"dfa-optimizer", "spec", zero + " != 'dfa' || " + s.value("spec.optimizer.type") + " != 'sgd'",
       "spec.zero dfa (DistributedFusedAdam) needs optimizer type adam or adamw", ".zero"},
      {"dfa-hook", "spec", zero + " != 'dfa' || (" + hook + " == 'allreduce' && " + wrapper + " == 'none')",
       "spec.zero dfa reduce-scatters gradients itself: use spec.commHook.type allreduce and no wrapper",
       ".commHook.type"},
      {"dfa-join", "spec", zero + " != 'dfa' || !" + join, "spec.join.enabled is not supported with zero: dfa",
       ".join.enabled"},
      {"join-uneven", "spec", "!" + join + " || " + s.value("spec.data.uneven.enabled"),
       "spec.join.enabled needs spec.data.uneven.enabled: true", ".join.enabled"},
      {"join-accumulation", "spec", "!" + join + " || " + s.value("spec.gradientAccumulation.steps") + " <= 1",
       "spec.join.enabled cannot be combined with spec.gradientAccumulation.steps > 1", ".join.enabled"},
      {"join-throw", "spec", "!" + s.value("spec.join.throwOnEarlyTermination") + " || " + join,
       "spec.join.throwOnEarlyTermination is only valid when spec.join.enabled is true",
       ".join.throwOnEarlyTermination"},
      {"mixed-precision-dfa", "spec", mixed + " == 'none' || " + zero + " != 'dfa'",
       "spec.mixedPrecision cannot be combined with zero: dfa", ".mixedPrecision"},
      {"mixed-precision-bucket-view", "spec", mixed + " == 'none' || !" + s.value("spec.gradientAsBucketView"),
       "spec.mixedPrecision cannot be combined with spec.gradientAsBucketView: true", ".mixedPrecision"},
      {"cuda-zero", "spec", device + " != 'cuda' || " + zero + " == 'none'",
       "spec.zero zero1 and dfa are not supported with spec.device: cuda (use zero: none)", ".zero"},
      {"cuda-join", "spec", device + " != 'cuda' || !" + join,
       "spec.join.enabled is not supported with spec.device: cuda", ".join.enabled"},
      {"cuda-powersgd", "spec", device + " != 'cuda' || !(" + powerSgd + ")",
       "spec.commHook.type powerSGD and batchedPowerSGD are not supported with spec.device: cuda (use "
       "allreduce, fp16 or bf16)",
       ".commHook.type"},
  };
}

std::vector<SpecCelRule> sectionRules() {
  const CelScope m("spec.model"), o("spec.optimizer"), p("spec.commHook.powerSGD"), t("spec.timeouts");
  const std::string type = m.value("spec.model.type");
  const std::string optimizer = o.value("spec.optimizer.type"), nesterov = o.value("spec.optimizer.nesterov");
  const std::string momentum = o.value("spec.optimizer.momentum"), dampening = o.value("spec.optimizer.dampening");
  const std::string hang = t.value("spec.timeouts.hangSeconds");
  return {
      {"cnn-kernel-odd", "spec.model", type + " != 'cnn' || " + m.value("spec.model.kernelSize") + " % 2 == 1",
       "spec.model.kernelSize must be odd", ".kernelSize"},
      {"gpt-heads-divide", "spec.model",
       type + " != 'gpt' || " + m.value("spec.model.dModel") + " % " + m.value("spec.model.heads") + " == 0",
       "spec.model.dModel must be divisible by spec.model.heads", ".dModel"},
      {"optimizer-sgd-only", "spec.optimizer",
       optimizer + " == 'sgd' || (" + momentum + " == 0.0 && " + dampening + " == 0.0 && !" + nesterov + ")",
       "spec.optimizer.momentum, dampening and nesterov are only valid for type sgd", ".type"},
      {"optimizer-nesterov", "spec.optimizer", "!" + nesterov + " || (" + momentum + " > 0.0 && " + dampening + " == 0.0)",
       "spec.optimizer.nesterov requires momentum > 0 and dampening 0", ".nesterov"},
      {"powersgd-start-iter", "spec.commHook.powerSGD",
       "!(" + p.value("spec.commHook.powerSGD.errorFeedback") + " || " + p.value("spec.commHook.powerSGD.warmStart") +
           ") || " + p.value("spec.commHook.powerSGD.startIter") + " > 1",
       "spec.commHook.powerSGD.startIter must be > 1 with errorFeedback or warmStart (buckets are rebuilt "
       "after iteration 1)",
       ".startIter"},
      {"timeouts-hang", "spec.timeouts",
       t.value("spec.timeouts.heartbeatSeconds") + " * double(" + t.value("spec.timeouts.heartbeatMisses") + ") < " + hang,
       "spec.timeouts.hangSeconds must be > heartbeatSeconds x heartbeatMisses (the rule: heartbeatSeconds x "
       "heartbeatMisses < hangSeconds < collectiveSeconds)",
       ".hangSeconds"},
      {"timeouts-collective", "spec.timeouts", hang + " < " + t.value("spec.timeouts.collectiveSeconds"),
       "spec.timeouts.collectiveSeconds must be > hangSeconds (the rule: heartbeatSeconds x heartbeatMisses < "
       "hangSeconds < collectiveSeconds)",
       ".collectiveSeconds"},
  };
}

// Transition rules: between the DDPJob before an update (oldSelf) and after (self).
std::vector<SpecCelRule> transitionRules() {
  const CelScope now("spec"), before("spec", "oldSelf");
  return {
      {"managed-by-immutable", "spec", now.value("spec.managedBy") + " == " + before.value("spec.managedBy"),
       "spec.managedBy cannot change once the DDPJob exists: a job is never managed by two controllers in turn "
       "(delete the DDPJob and create it again to hand it to another manager)",
       ".managedBy"},
  };
}

std::vector<SpecCelRule> buildRules() {
  std::vector<SpecCelRule> all;
  for (auto part : {documentRules, workerRules, trainingRules, communicationRules, sectionRules, transitionRules}) {
    for (SpecCelRule& r : part()) all.push_back(std::move(r));
  }
  return all;
}

}  // namespace

const std::vector<SpecCelRule>& jobSpecCelRules() {
  static const std::vector<SpecCelRule> rules = buildRules();
  return rules;
}

std::string celRuleMessage(const SpecCelRule& rule) { return rule.message + " (rule " + rule.id + ")"; }

std::vector<const SpecCelRule*> jobSpecCelRulesAt(std::string_view at) {
  std::vector<const SpecCelRule*> out;
  for (const SpecCelRule& r : jobSpecCelRules()) {
    if (r.at == at) out.push_back(&r);
  }
  return out;
}

std::string CelScope::relative(std::string_view path) const {
  if (at_.empty()) return "." + std::string(path);
  if (path.substr(0, at_.size()) != at_ || path.size() <= at_.size() || path[at_.size()] != '.') {
    badRule("not under " + at_, path);
  }
  return std::string(path.substr(at_.size()));
}

std::string CelScope::present(std::string_view path) const {
  const std::string rel = relative(path);
  std::string out;
  for (size_t dot = rel.find('.', 1);; dot = rel.find('.', dot + 1)) {
    out += std::string(out.empty() ? "" : " && ") + "has(" + root_ + rel.substr(0, dot) + ")";
    if (dot == std::string::npos) break;
  }
  return out;
}

std::string CelScope::valueOr(std::string_view path, const std::string& fallback) const {
  if (!findJobSpecField(path)) badRule("no such field in the table", path);
  return "(" + present(path) + " ? " + root_ + relative(path) + " : " + fallback + ")";
}

std::string CelScope::value(std::string_view path) const {
  const SpecField* f = findJobSpecField(path);
  if (!f || !f->get) badRule("no bound field in the table", path);
  if (f->absentDefault) badRule("its default depends on other fields (use valueOr)", path);
  return valueOr(path, literal(f->get(JobSpec{}), path));
}

}  // namespace ddp
