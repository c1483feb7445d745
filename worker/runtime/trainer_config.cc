#include "worker/runtime/trainer_config.h"

namespace ddp::runtime {

Status TrainerConfig::validate() const {
  if (batchSize <= 0) return invalidArgument("spec.data.batchSize: must be >= 1");
  if (epochs < 0 || (epochs == 0 && maxSteps <= 0)) return invalidArgument("spec.epochs: one of epochs / steps must be >= 1");
  if (maxSteps < 0) return invalidArgument("spec.steps: must be >= 0");
  if (gradAccumulation <= 0) return invalidArgument("spec.gradientAccumulation.steps: must be >= 1");
  if (cpuThreads < 0) return invalidArgument("spec.threadsPerWorker: must be >= 0");
  if (evalBatchSize <= 0) return invalidArgument("spec.eval.batchSize must be >= 1");
  if (stopCheckEverySteps <= 0) return invalidArgument("stopCheckEverySteps: must be >= 1");
  if (logEverySteps <= 0) return invalidArgument("logEverySteps: must be >= 1");
  if (hook == CommHookType::kNoop) {
    return invalidArgument("spec.commHook.type: noop leaves gradients unreduced (debugging only); the trainer refuses it");
  }
  if (hook == CommHookType::kPowerSgd || hook == CommHookType::kBatchedPowerSgd) {
    DDP_RETURN_IF_ERROR(powerSgd.validate().withContext("spec.commHook.powerSGD"));
  }
  if (maxGradNorm < 0) return invalidArgument("spec.optimizer.maxGradNorm: must be >= 0");
  if (maxGradNorm > 0 && sharding == ZeroMode::kZero1) {
    return invalidArgument("spec.optimizer.maxGradNorm: not supported with spec.zero in this build");
  }
  if (bucketCapMb <= 0) return invalidArgument("spec.bucketCapMb: must be > 0");
  if (keepCheckpoints < 0) return invalidArgument("spec.checkpoint.keep: must be >= 0");
  if (checkpointEverySteps < 0) return invalidArgument("spec.checkpoint.everySteps: must be >= 0");
  DDP_RETURN_IF_ERROR(optimizer.validate().withContext("spec.optimizer"));
  DDP_RETURN_IF_ERROR(lr.validate().withContext("spec.optimizer.schedule"));
  if (model == ModelType::kMlp) DDP_RETURN_IF_ERROR(mlp.validate().withContext("spec.model"));
  if (model == ModelType::kCnn) DDP_RETURN_IF_ERROR(cnn.validate().withContext("spec.model"));
  if (data == DatasetKind::kSynthetic) DDP_RETURN_IF_ERROR(synthetic.validate().withContext("spec.data.synthetic"));
  if (sharding == ZeroMode::kDfa && optimizer.kind == optim::OptimizerKind::kSgd) {
    return invalidArgument("spec.zero: dfa (DistributedFusedAdam) needs spec.optimizer.type adam or adamw");
  }
  if (join && samplerMode != data::SamplerMode::kUneven) {
    return invalidArgument("spec.join.enabled: needs spec.data.uneven.enabled (even inputs need no Join)");
  }
  if (samplerMode == data::SamplerMode::kUneven && !join) {
    return invalidArgument("spec.data.uneven.enabled: needs spec.join.enabled (ranks would run different step counts)");
  }
  if (sharding == ZeroMode::kDfa && (hook != CommHookType::kAllreduce || hookWrapper != HookWrapper::kNone)) {
    return invalidArgument("spec.commHook: DistributedFusedAdam reduces gradients itself (reduce-scatter); use the default allreduce hook");
  }
  if (sharding == ZeroMode::kDfa && join) {
    return invalidArgument("spec.join.enabled: not supported with spec.zero: dfa");
  }
  if (mixedPrecision != MixedPrecision::kNone && sharding == ZeroMode::kDfa) {
    return invalidArgument(std::string("spec.mixedPrecision: ") + mixedPrecisionName(mixedPrecision) +
                           " is not supported with spec.zero: dfa (DistributedFusedAdam reduce-scatters the f32 "
                           "gradients itself, bypassing the DDP reducer that casts them)");
  }
  if (mixedPrecision != MixedPrecision::kNone && gradientAsBucketView) {
    return invalidArgument(std::string("spec.mixedPrecision: ") + mixedPrecisionName(mixedPrecision) +
                           " cannot be combined with spec.gradientAsBucketView (the half-precision buckets "
                           "cannot hold the f32 gradients)");
  }
  if (join && gradAccumulation != 1) {
    return invalidArgument("spec.join.enabled: not supported with spec.gradientAccumulation.steps > 1");
  }
  return validateDevice();
}

Status TrainerConfig::validateDevice() const {
  if (device.isCpu()) return Status::ok();
  if (!device.isCuda()) return invalidArgument("spec.device: " + device.toString() + " is not a training device (cpu or cuda)");
  const std::string with = " is not supported with spec.device: cuda (";
  if (sharding == ZeroMode::kZero1) {
    return invalidArgument("spec.zero: zero1" + with +
                           "ZeroRedundancyOptimizer packs and broadcasts its shards through host buffers; use zero: none)");
  }
  if (sharding == ZeroMode::kDfa) {
    return invalidArgument("spec.zero: dfa" + with +
                           "DistributedFusedAdam keeps its gradient buckets and Adam state in host memory; use zero: none)");
  }
  if (join) {
    return invalidArgument("spec.join.enabled: true" + with +
                           "Join and the DDP joinable shadow collectives on CPU parameters only)");
  }
  if (hook == CommHookType::kPowerSgd || hook == CommHookType::kBatchedPowerSgd) {
    return invalidArgument(std::string("spec.commHook.type: ") + commHookTypeName(hook) + with +
                           "the PowerSGD hooks keep P, Q and the error feedback in host memory; use allreduce, fp16 or bf16)");
  }
  return Status::ok();
}

}  // namespace ddp::runtime
