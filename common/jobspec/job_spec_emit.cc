// JobSpec::toYaml(): every field written out, so that parseJobSpec(toYaml()) == *this.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace ddp {
namespace {

// Shortest decimal text that reads back as the same double.
std::string formatDouble(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.1f", v);  // 300.0 rather than 3e+02
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it visibly a number
  return s;
}

void emitIntList(YAML::Emitter& out, const std::vector<int64_t>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int64_t x : v) out << x;
  out << YAML::EndSeq;
}

void emitStringMap(YAML::Emitter& out, const char* key, const std::map<std::string, std::string>& m) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : m) out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
  out << YAML::EndMap;
}

// spec.kubernetes, every field (the optional ones when set).
void emitKubernetes(YAML::Emitter& out, const KubernetesSpec& k) {
  using YAML::BeginMap;
  using YAML::EndMap;
  using YAML::Key;
  using YAML::Value;
  out << Key << "kubernetes" << Value << BeginMap;
  out << Key << "image" << Value << YAML::DoubleQuoted << k.image;
  out << Key << "imagePullPolicy" << Value << imagePullPolicyName(k.imagePullPolicy);
  out << Key << "resources" << Value << BeginMap;
  emitStringMap(out, "requests", k.resources.requests);
  emitStringMap(out, "limits", k.resources.limits);
  out << EndMap;
  emitStringMap(out, "nodeSelector", k.nodeSelector);
  out << Key << "tolerations" << Value << YAML::BeginSeq;
  for (const TolerationSpec& t : k.tolerations) {
    out << BeginMap << Key << "key" << Value << YAML::DoubleQuoted << t.key << Key << "operator"
        << Value << YAML::DoubleQuoted << t.op << Key << "value" << Value << YAML::DoubleQuoted
        << t.value << Key << "effect" << Value << YAML::DoubleQuoted << t.effect;
    if (t.tolerationSeconds) out << Key << "tolerationSeconds" << Value << *t.tolerationSeconds;
    out << EndMap;
  }
  out << YAML::EndSeq;
  out << Key << "serviceAccountName" << Value << YAML::DoubleQuoted << k.serviceAccountName;
  out << Key << "checkpointVolumeClaim" << Value << YAML::DoubleQuoted << k.checkpointVolumeClaim;
  out << Key << "capSysNice" << Value << k.capSysNice;
  const RunPolicySpec& r = k.runPolicy;
  out << Key << "runPolicy" << Value << BeginMap;
  out << Key << "cleanPodPolicy" << Value << cleanPodPolicyName(r.cleanPodPolicy);
  if (r.activeDeadlineSeconds) out << Key << "activeDeadlineSeconds" << Value << *r.activeDeadlineSeconds;
  if (r.ttlSecondsAfterFinished) out << Key << "ttlSecondsAfterFinished" << Value << *r.ttlSecondsAfterFinished;
  out << Key << "schedulingPolicy" << Value << BeginMap << Key << "scheduleTimeoutSeconds" << Value
      << r.schedulingPolicy.scheduleTimeoutSeconds << Key << "onScheduleTimeout" << Value
      << scheduleTimeoutActionName(r.schedulingPolicy.onScheduleTimeout) << EndMap;
  out << EndMap << EndMap;
}

}  // namespace

std::string JobSpec::toYaml() const {
  YAML::Emitter out;
  using YAML::BeginMap;
  using YAML::EndMap;
  using YAML::Key;
  using YAML::Value;
  auto dbl = [](double v) { return formatDouble(v); };
  out << BeginMap;
  out << Key << "apiVersion" << Value << apiVersion;
  out << Key << "kind" << Value << kind;
  out << Key << "metadata" << Value << BeginMap << Key << "name" << Value << name;
  if (!labels.empty()) emitStringMap(out, "labels", labels);
  out << EndMap;
  out << Key << "spec" << Value << BeginMap;
  out << Key << "workers" << Value << YAML::Flow << BeginMap << Key << "count" << Value
      << workers.count << Key << "min" << Value << workers.min << Key << "max" << Value
      << workers.max << EndMap;
  out << Key << "device" << Value << jobDeviceName(device);
  out << Key << "threadsPerWorker" << Value << threadsPerWorker;

  out << Key << "model" << Value << BeginMap;
  out << Key << "type" << Value << modelTypeName(model.type);
  out << Key << "hidden" << Value;
  emitIntList(out, model.hidden);
  out << Key << "activation" << Value << model.activation;
  if (model.type == ModelType::kCnn) {
    out << Key << "convChannels" << Value;
    emitIntList(out, model.convChannels);
    out << Key << "kernelSize" << Value << model.kernelSize;
  }
  out << EndMap;

  out << Key << "data" << Value << BeginMap;
  out << Key << "dataset" << Value << datasetKindName(data.dataset);
  if (data.dataset == DatasetKind::kFashionMnist) {
    out << Key << "dir" << Value << YAML::DoubleQuoted << data.dir;
  }
  out << Key << "batchSize" << Value << data.batchSize;
  out << Key << "globalBatchSize" << Value << data.globalBatchSize;
  out << Key << "shuffle" << Value << data.shuffle;
  out << Key << "dropLast" << Value << data.dropLast;
  out << Key << "normalize" << Value << data.normalize;
  out << Key << "limit" << Value << data.limit;
  out << Key << "uneven" << Value << BeginMap << Key << "enabled" << Value << data.uneven.enabled
      << Key << "counts" << Value;
  emitIntList(out, data.uneven.counts);
  out << EndMap;
  if (data.dataset == DatasetKind::kSynthetic) {
    const SyntheticSpec& s = data.synthetic;
    out << Key << "synthetic" << Value << BeginMap << Key << "samples" << Value << s.samples
        << Key << "features" << Value << s.features << Key << "classes" << Value << s.classes
        << Key << "separation" << Value << dbl(s.separation) << Key << "noise" << Value
        << dbl(s.noise) << EndMap;
  }
  out << EndMap;

  const OptimizerSpec& o = optimizer;
  out << Key << "optimizer" << Value << BeginMap;
  out << Key << "type" << Value << optimizerTypeName(o.type);
  out << Key << "lr" << Value << dbl(o.lr);
  out << Key << "weightDecay" << Value << dbl(o.weightDecay);
  out << Key << "momentum" << Value << dbl(o.momentum);
  out << Key << "dampening" << Value << dbl(o.dampening);
  out << Key << "nesterov" << Value << o.nesterov;
  if (o.type != OptimizerType::kSgd) {
    out << Key << "betas" << Value << YAML::Flow << YAML::BeginSeq << dbl(o.beta1) << dbl(o.beta2)
        << YAML::EndSeq;
    out << Key << "eps" << Value << dbl(o.eps);
  }
  out << Key << "maxGradNorm" << Value << dbl(o.maxGradNorm);
  out << Key << "schedule" << Value << BeginMap;
  out << Key << "type" << Value << scheduleTypeName(o.schedule.type);
  out << Key << "warmupSteps" << Value << o.schedule.warmupSteps;
  if (o.schedule.type == ScheduleType::kStep) {
    out << Key << "stepSize" << Value << o.schedule.stepSize;
    out << Key << "gamma" << Value << dbl(o.schedule.gamma);
  }
  if (o.schedule.type == ScheduleType::kCosine) out << Key << "minLr" << Value << dbl(o.schedule.minLr);
  out << EndMap << EndMap;

  out << Key << "zero" << Value << zeroModeName(zero);
  out << Key << "commHook" << Value << BeginMap;
  out << Key << "type" << Value << commHookTypeName(commHook.type);
  out << Key << "wrapper" << Value << hookWrapperName(commHook.wrapper);
  if (commHook.type == CommHookType::kPowerSgd || commHook.type == CommHookType::kBatchedPowerSgd) {
    const PowerSgdSpec& p = commHook.powerSGD;
    out << Key << "powerSGD" << Value << BeginMap << Key << "rank" << Value << p.rank << Key
        << "startIter" << Value << p.startIter << Key << "minCompressionRate" << Value
        << dbl(p.minCompressionRate) << Key << "errorFeedback" << Value << p.errorFeedback << Key
        << "warmStart" << Value << p.warmStart << Key << "orthogonalizationEpsilon" << Value
        << dbl(p.orthogonalizationEpsilon) << Key << "seed" << Value << p.seed << Key
        << "batchTensorsWithSameShape" << Value << p.batchTensorsWithSameShape << EndMap;
  }
  out << EndMap;
  out << Key << "join" << Value << BeginMap << Key << "enabled" << Value << join.enabled << Key
      << "throwOnEarlyTermination" << Value << join.throwOnEarlyTermination << Key
      << "divideByInitialWorldSize" << Value << join.divideByInitialWorldSize << EndMap;
  out << Key << "gradientAccumulation" << Value << YAML::Flow << BeginMap << Key << "steps"
      << Value << gradientAccumulationSteps << EndMap;
  out << Key << "mixedPrecision" << Value << mixedPrecisionName(mixedPrecision);
  if (epochs > 0 || steps == 0) out << Key << "epochs" << Value << epochs;
  if (steps > 0) out << Key << "steps" << Value << steps;
  out << Key << "seed" << Value << seed;
  out << Key << "checkpoint" << Value << BeginMap << Key << "dir" << Value << YAML::DoubleQuoted
      << checkpoint.dir << Key << "everySteps" << Value << checkpoint.everySteps << Key << "keep"
      << Value << checkpoint.keep << EndMap;
  out << Key << "eval" << Value << BeginMap << Key << "everyEpoch" << Value << eval.everyEpoch
      << Key << "batchSize" << Value << eval.batchSize << Key << "limit" << Value << eval.limit
      << EndMap;
  out << Key << "bucketCapMb" << Value << dbl(bucketCapMb);
  out << Key << "firstBucketMb" << Value << dbl(firstBucketMb);
  out << Key << "gradientAsBucketView" << Value << gradientAsBucketView;
  out << Key << "maxRestarts" << Value << maxRestarts;
  const TimeoutsSpec& t = timeouts;
  out << Key << "timeouts" << Value << BeginMap;
  out << Key << "heartbeatSeconds" << Value << dbl(t.heartbeatSeconds);
  out << Key << "heartbeatMisses" << Value << t.heartbeatMisses;
  out << Key << "lastCallSeconds" << Value << dbl(t.lastCallSeconds);
  out << Key << "hangSeconds" << Value << dbl(t.hangSeconds);
  out << Key << "progressSeconds" << Value << dbl(t.progressSeconds);
  out << Key << "controllerSeconds" << Value << dbl(t.controllerSeconds);
  out << Key << "collectiveSeconds" << Value << dbl(t.collectiveSeconds);
  out << Key << "rendezvousSeconds" << Value << dbl(t.rendezvousSeconds);
  out << EndMap;
  out << Key << "elastic" << Value << BeginMap << Key << "keepGlobalBatch" << Value << elastic.keepGlobalBatch
      << EndMap;
  out << Key << "logFormat" << Value << jobLogFormatName(logFormat);
  out << Key << "commThreadPriority" << Value << commThreadPriorityName(commThreadPriority);
  emitKubernetes(out, kubernetes);
  out << EndMap << EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ddp
