// The DDPJob field table (job_spec_fields.h).
#include "common/jobspec/job_spec_fields.h"

#include <cctype>

namespace ddp {

const char* specFieldTypeName(SpecFieldType t) {
  switch (t) {
    case SpecFieldType::kObject: return "object";
    case SpecFieldType::kString: return "string";
    case SpecFieldType::kInteger: return "integer";
    case SpecFieldType::kNumber: return "number";
    case SpecFieldType::kBoolean: return "boolean";
    case SpecFieldType::kIntegerList: return "array of integer";
    case SpecFieldType::kNumberList: return "array of number";
    case SpecFieldType::kObjectList: return "array of object";
    case SpecFieldType::kStringMap: return "map of string";
    case SpecFieldType::kQuantityMap: return "map of quantity";
    case SpecFieldType::kIgnored: return "ignored";
  }
  return "?";
}

const std::vector<SpecField>& jobSpecFields() {
  using T = SpecFieldType;
  static const std::vector<SpecField> kFields = {
      {"apiVersion", T::kString},
      {"kind", T::kString},
      {"metadata", T::kObject},
      {"metadata.name", T::kString},
      {"metadata.labels", T::kStringMap},
      // Kubernetes ObjectMeta that a DDPJob read back from the API server carries.
      {"metadata.namespace", T::kIgnored},
      {"metadata.annotations", T::kIgnored},
      {"metadata.uid", T::kIgnored},
      {"metadata.resourceVersion", T::kIgnored},
      {"metadata.generation", T::kIgnored},
      {"metadata.creationTimestamp", T::kIgnored},
      {"metadata.deletionTimestamp", T::kIgnored},
      {"metadata.deletionGracePeriodSeconds", T::kIgnored},
      {"metadata.managedFields", T::kIgnored},
      {"metadata.ownerReferences", T::kIgnored},
      {"metadata.finalizers", T::kIgnored},
      {"metadata.generateName", T::kIgnored},
      {"metadata.selfLink", T::kIgnored},
      {"spec", T::kObject},
      {"spec.workers", T::kObject},
      {"spec.workers.count", T::kInteger},
      {"spec.workers.min", T::kInteger},
      {"spec.workers.max", T::kInteger},
      {"spec.device", T::kString},
      {"spec.threadsPerWorker", T::kInteger},
      {"spec.model", T::kObject},
      {"spec.model.type", T::kString},
      {"spec.model.hidden", T::kIntegerList},
      {"spec.model.activation", T::kString},
      {"spec.model.convChannels", T::kIntegerList},
      {"spec.model.kernelSize", T::kInteger},
      {"spec.data", T::kObject},
      {"spec.data.dataset", T::kString},
      {"spec.data.dir", T::kString},
      {"spec.data.batchSize", T::kInteger},
      {"spec.data.globalBatchSize", T::kInteger},
      {"spec.data.shuffle", T::kBoolean},
      {"spec.data.dropLast", T::kBoolean},
      {"spec.data.normalize", T::kBoolean},
      {"spec.data.limit", T::kInteger},
      {"spec.data.uneven", T::kObject},
      {"spec.data.uneven.enabled", T::kBoolean},
      {"spec.data.uneven.counts", T::kIntegerList},
      {"spec.data.synthetic", T::kObject},
      {"spec.data.synthetic.samples", T::kInteger},
      {"spec.data.synthetic.features", T::kInteger},
      {"spec.data.synthetic.classes", T::kInteger},
      {"spec.data.synthetic.separation", T::kNumber},
      {"spec.data.synthetic.noise", T::kNumber},
      {"spec.optimizer", T::kObject},
      {"spec.optimizer.type", T::kString},
      {"spec.optimizer.lr", T::kNumber},
      {"spec.optimizer.weightDecay", T::kNumber},
      {"spec.optimizer.momentum", T::kNumber},
      {"spec.optimizer.dampening", T::kNumber},
      {"spec.optimizer.nesterov", T::kBoolean},
      {"spec.optimizer.betas", T::kNumberList},
      {"spec.optimizer.eps", T::kNumber},
      {"spec.optimizer.maxGradNorm", T::kNumber},
      {"spec.optimizer.schedule", T::kObject},
      {"spec.optimizer.schedule.type", T::kString},
      {"spec.optimizer.schedule.warmupSteps", T::kInteger},
      {"spec.optimizer.schedule.stepSize", T::kInteger},
      {"spec.optimizer.schedule.gamma", T::kNumber},
      {"spec.optimizer.schedule.minLr", T::kNumber},
      {"spec.zero", T::kString},
      {"spec.commHook", T::kObject},
      {"spec.commHook.type", T::kString},
      {"spec.commHook.wrapper", T::kString},
      {"spec.commHook.powerSGD", T::kObject},
      {"spec.commHook.powerSGD.rank", T::kInteger},
      {"spec.commHook.powerSGD.startIter", T::kInteger},
      {"spec.commHook.powerSGD.minCompressionRate", T::kNumber},
      {"spec.commHook.powerSGD.errorFeedback", T::kBoolean},
      {"spec.commHook.powerSGD.warmStart", T::kBoolean},
      {"spec.commHook.powerSGD.orthogonalizationEpsilon", T::kNumber},
      {"spec.commHook.powerSGD.seed", T::kInteger},
      {"spec.commHook.powerSGD.batchTensorsWithSameShape", T::kBoolean},
      {"spec.join", T::kObject},
      {"spec.join.enabled", T::kBoolean},
      {"spec.join.throwOnEarlyTermination", T::kBoolean},
      {"spec.join.divideByInitialWorldSize", T::kBoolean},
      {"spec.gradientAccumulation", T::kObject},
      {"spec.gradientAccumulation.steps", T::kInteger},
      {"spec.mixedPrecision", T::kString},
      {"spec.epochs", T::kInteger},
      {"spec.steps", T::kInteger},
      {"spec.seed", T::kInteger},
      {"spec.checkpoint", T::kObject},
      {"spec.checkpoint.dir", T::kString},
      {"spec.checkpoint.everySteps", T::kInteger},
      {"spec.checkpoint.keep", T::kInteger},
      {"spec.eval", T::kObject},
      {"spec.eval.everyEpoch", T::kBoolean},
      {"spec.eval.batchSize", T::kInteger},
      {"spec.eval.limit", T::kInteger},
      {"spec.bucketCapMb", T::kNumber},
      {"spec.firstBucketMb", T::kNumber},
      {"spec.gradientAsBucketView", T::kBoolean},
      {"spec.maxRestarts", T::kInteger},
      {"spec.elastic", T::kObject},
      {"spec.elastic.keepGlobalBatch", T::kBoolean},
      {"spec.timeouts", T::kObject},
      {"spec.timeouts.heartbeatSeconds", T::kNumber},
      {"spec.timeouts.heartbeatMisses", T::kInteger},
      {"spec.timeouts.lastCallSeconds", T::kNumber},
      {"spec.timeouts.hangSeconds", T::kNumber},
      {"spec.timeouts.progressSeconds", T::kNumber},
      {"spec.timeouts.controllerSeconds", T::kNumber},
      {"spec.timeouts.collectiveSeconds", T::kNumber},
      {"spec.timeouts.rendezvousSeconds", T::kNumber},
      {"spec.logFormat", T::kString},
      {"spec.commThreadPriority", T::kString},
      {"spec.kubernetes", T::kObject},
      {"spec.kubernetes.image", T::kString},
      {"spec.kubernetes.imagePullPolicy", T::kString},
      {"spec.kubernetes.resources", T::kObject},
      {"spec.kubernetes.resources.requests", T::kQuantityMap},
      {"spec.kubernetes.resources.limits", T::kQuantityMap},
      {"spec.kubernetes.nodeSelector", T::kStringMap},
      {"spec.kubernetes.tolerations", T::kObjectList},
      {"spec.kubernetes.tolerations[].key", T::kString},
      {"spec.kubernetes.tolerations[].operator", T::kString},
      {"spec.kubernetes.tolerations[].value", T::kString},
      {"spec.kubernetes.tolerations[].effect", T::kString},
      {"spec.kubernetes.tolerations[].tolerationSeconds", T::kInteger},
      {"spec.kubernetes.serviceAccountName", T::kString},
      {"spec.kubernetes.checkpointVolumeClaim", T::kString},
      {"spec.kubernetes.capSysNice", T::kBoolean},
      {"spec.kubernetes.runPolicy", T::kObject},
      {"spec.kubernetes.runPolicy.cleanPodPolicy", T::kString},
      {"spec.kubernetes.runPolicy.activeDeadlineSeconds", T::kInteger},
      {"spec.kubernetes.runPolicy.ttlSecondsAfterFinished", T::kInteger},
      {"spec.kubernetes.runPolicy.schedulingPolicy", T::kObject},
      {"spec.kubernetes.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", T::kInteger},
      {"spec.kubernetes.runPolicy.schedulingPolicy.onScheduleTimeout", T::kString},
      // Written by the controller; a DDPJob read back from the API server carries it.
      {"status", T::kIgnored},
  };
  return kFields;
}

namespace {

// "a.b[3].c" -> "a.b[].c"
std::string withoutIndices(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] != '[') continue;
    size_t j = i + 1;
    while (j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) ++j;
    i = j - 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> jobSpecFieldKeys(std::string_view path) {
  const std::string parent = withoutIndices(path);
  const std::string prefix = parent.empty() ? "" : parent + ".";
  std::vector<std::string> keys;
  for (const SpecField& f : jobSpecFields()) {
    if (f.path.size() <= prefix.size() || f.path.substr(0, prefix.size()) != prefix) continue;
    const std::string_view rest = f.path.substr(prefix.size());
    if (rest.find_first_of(".[") == std::string_view::npos) keys.emplace_back(rest);
  }
  return keys;
}

}  // namespace ddp
