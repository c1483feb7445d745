#include "worker/training/trainer_config.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "common/fnv1a.h"

namespace ddp::runtime {
namespace {

// Feeds values into an FNV-1a hash (Note [Trajectory hash]); every value is fed at a fixed
// width and every list with its length, so distinct configs do not run together.
class TrajectoryHasher {
 public:
  void add(uint64_t v) { h_ = fnv1aWord(h_, v); }
  void add(int64_t v) { add(static_cast<uint64_t>(v)); }
  void add(int v) { add(static_cast<int64_t>(v)); }
  void add(bool v) { add(static_cast<uint64_t>(v ? 1 : 0)); }
  void add(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    add(bits);
  }
  void add(float v) { add(static_cast<double>(v)); }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void add(E e) {
    add(static_cast<uint64_t>(e));
  }
  template <typename T>
  void add(const std::vector<T>& v) {
    add(static_cast<uint64_t>(v.size()));
    for (const T& x : v) add(x);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = fnv1a("ddp trajectory v1");
};

// A declared stack: every layer's kind and parameters, blocks with their layers.
void addLayers(TrajectoryHasher& h, const std::vector<LayerSpec>& layers) {
  h.add(static_cast<uint64_t>(layers.size()));
  for (const LayerSpec& l : layers) {
    h.add(l.kind);
    h.add(l.out);
    h.add(l.kernel);
    h.add(l.stride);
    h.add(l.padding);
    h.add(l.p);
    h.add(l.eps);
    addLayers(h, l.layers);
  }
}

// The feeds of trajectoryHash, section by section, in the order the pinned hashes were made
// with (tests/unit/runtime/trajectory_hash_pin_test.cc): reordering them changes every hash.
void addModel(TrajectoryHasher& h, const TrainerConfig& c) {
  h.add(c.seed);
  h.add(c.model);  // the active model's shape
  if (c.model == ModelType::kMlp) {
    h.add(c.mlp.inputs);
    h.add(c.mlp.hidden);
    h.add(c.mlp.classes);
    h.add(c.mlp.activation);
  } else if (c.model == ModelType::kCnn) {
    h.add(c.cnn.input);
    h.add(c.cnn.convChannels);
    h.add(c.cnn.kernel);
    h.add(c.cnn.hidden);
    h.add(c.cnn.classes);
    h.add(c.cnn.activation);
  } else if (c.model == ModelType::kSequential) {
    h.add(c.stackInput);
    addLayers(h, c.stack);
  }
  if (c.loss != LossType::kCrossEntropy) h.add(c.loss);  // fed only when not the default
}

void addData(TrajectoryHasher& h, const TrainerConfig& c) {
  h.add(c.data);
  if (c.data == DatasetKind::kSynthetic) {
    h.add(c.synthetic.samples);
    h.add(c.synthetic.sampleShape);
    h.add(c.synthetic.classes);
    h.add(c.synthetic.separation);
    h.add(c.synthetic.noise);
    h.add(c.synthetic.seed);
  }
  h.add(c.trainLimit);
  h.add(c.normalize);
  h.add(c.shuffle);
  h.add(c.samplerMode);
}

void addSchedule(TrajectoryHasher& h, const TrainerConfig& c) {
  h.add(c.batchSize);
  h.add(c.epochs);
  h.add(c.maxSteps);
  h.add(c.gradAccumulation);
  h.add(c.optimizer.kind);
  h.add(c.optimizer.lr);
  h.add(c.optimizer.weightDecay);
  h.add(c.optimizer.momentum);
  h.add(c.optimizer.dampening);
  h.add(c.optimizer.nesterov);
  h.add(c.optimizer.beta1);
  h.add(c.optimizer.beta2);
  h.add(c.optimizer.eps);
  h.add(c.maxGradNorm);
  h.add(c.lr.kind);
  h.add(c.lr.warmupSteps);
  h.add(c.lr.stepSize);
  h.add(c.lr.gamma);
  h.add(c.lr.minLr);
}

void addCommunication(TrajectoryHasher& h, const TrainerConfig& c) {
  h.add(c.hook);
  h.add(c.hookWrapper);
  if (c.hook == CommHookType::kPowerSgd || c.hook == CommHookType::kBatchedPowerSgd) {
    const PowerSgdOptions& p = c.powerSgd;
    h.add(p.matrixApproximationRank);
    h.add(p.startPowerSgdIter);
    h.add(p.minCompressionRate);
    h.add(p.useErrorFeedback);
    h.add(p.warmStart);
    h.add(p.orthogonalizationEpsilon);
    h.add(p.randomSeed);
    h.add(p.batchTensorsWithSameShape);
    h.add(p.worldSizeChangePolicy);
  }
  h.add(c.mixedPrecision);
  h.add(c.sharding);
  h.add(c.join);
  if (c.join) h.add(c.joinDivideByInitialWorldSize);
}

// Fed only for language-model jobs, and weightDecayOn only off its default otherwise, so every
// earlier job keeps its hash.
void addLanguageModel(TrajectoryHasher& h, const TrainerConfig& c) {
  if (!c.languageModel()) {
    if (c.weightDecayOn != WeightDecayOn::kAll) h.add(c.weightDecayOn);
    return;
  }
  const model::GptConfig& g = c.gpt;
  h.add(g.vocabSize);
  h.add(g.contextLength);
  h.add(g.layers);
  h.add(g.heads);
  h.add(g.dModel);
  h.add(g.mlpHidden);
  h.add(g.norm);
  h.add(g.rope);
  h.add(g.tiedEmbeddings);
  h.add(g.dropout);
  h.add(fnv1a(c.trainTokens.rawDType));
  h.add(!c.valTokens.path.empty());
  h.add(fnv1a(c.valTokens.rawDType));
  h.add(c.valFraction);
  h.add(c.weightDecayOn);
  // bf16 matmuls compute another trajectory; fp32 (the default) is not fed, so earlier hashes hold.
  if (g.precision != model::GptPrecision::kFp32) h.add(g.precision);
}

// Fed only for a user's dataset (idx, npy, csv), so every earlier job keeps its hash. Not the
// paths (locations, as dataDir), nor valLimit (evaluation only).
void addUserData(TrajectoryHasher& h, const TrainerConfig& c) {
  if (!c.fromUserFiles()) return;
  const data::UserDataConfig& u = c.userData;
  h.add(fnv1a(u.files.target));
  h.add(!u.files.val.empty());
  h.add(u.classes);
  h.add(u.valFraction);
  h.add(u.standardizeAuto);
  h.add(u.standardizeMean);
  h.add(u.standardizeStd);
}

// Fed only when the job starts from a file (spec.init.from), so every other job keeps its hash.
void addInit(TrajectoryHasher& h, const TrainerConfig& c) {
  if (c.initFrom.empty()) return;
  h.add(fnv1a("spec.init.from"));
  h.add(fnv1a(c.initFrom));
}

}  // namespace

uint64_t trajectoryHash(const TrainerConfig& c) {
  TrajectoryHasher h;
  addModel(h, c);
  addData(h, c);
  addSchedule(h, c);
  addCommunication(h, c);
  addLanguageModel(h, c);
  addUserData(h, c);
  addInit(h, c);
  return h.value();
}

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
  if (bucketCapMb <= 0) return invalidArgument("spec.bucketCapMb: must be > 0");
  if (keepCheckpoints < 0) return invalidArgument("spec.checkpoint.keep: must be >= 0");
  if (checkpointEverySteps < 0) return invalidArgument("spec.checkpoint.everySteps: must be >= 0");
  DDP_RETURN_IF_ERROR(optimizer.validate().withContext("spec.optimizer"));
  DDP_RETURN_IF_ERROR(lr.validate().withContext("spec.optimizer.schedule"));
  if (model == ModelType::kMlp) DDP_RETURN_IF_ERROR(mlp.validate().withContext("spec.model"));
  if (model == ModelType::kCnn) DDP_RETURN_IF_ERROR(cnn.validate().withContext("spec.model"));
  if (model == ModelType::kSequential && !stackInput.empty()) {  // empty: the data's shape, at setup
    const StackShapes shapes = inferStackShapes(stack, stackInput);
    if (!shapes.ok()) return invalidArgument(shapes.errorPath + ": " + shapes.error);
  }
  if (loss == LossType::kMse && !fromUserFiles()) {
    return invalidArgument("spec.loss: mse needs float targets (an npy or csv dataset); this dataset gives class labels");
  }
  if (languageModel()) DDP_RETURN_IF_ERROR(validateLanguageModel());
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

Status TrainerConfig::validateLanguageModel() const {
  if (model != ModelType::kGpt || (data != DatasetKind::kTokens && data != DatasetKind::kText)) {
    return invalidArgument("spec.model.type: gpt trains on dataset tokens or text, and those datasets need gpt");
  }
  DDP_RETURN_IF_ERROR(gpt.validate());
  if (gpt.vocabSize < 2) return invalidArgument("spec.model.vocabSize: must be >= 2");
  if (data == DatasetKind::kText && gpt.vocabSize < 256) {
    return invalidArgument("spec.model.vocabSize: must be >= 256 for dataset text (bytes are tokens 0-255)");
  }
  if (trainTokens.path.empty()) return invalidArgument("spec.data.train.path: required for a language model");
  if (maxSteps <= 0) return invalidArgument("spec.steps: language models train by steps");
  if (!(valFraction >= 0 && valFraction < 1)) return invalidArgument("spec.data.valFraction: must be in [0, 1)");
  if (evalEverySteps < 0) return invalidArgument("spec.eval.everySteps: must be >= 0");
  if (samplerMode == data::SamplerMode::kUneven || join) {
    return invalidArgument("spec.data.uneven.enabled: not supported with token windows");
  }
  return Status::ok();
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
