#include "worker/training/job_spec_adapter.h"

#include <algorithm>
#include <chrono>

#include "common/tokens/byte_tokens.h"
#include "kernels/layer_ops.h"
#include "worker/comm/nccl_backend.h"

namespace ddp::runtime {

namespace {

void adaptGpt(const JobSpec& s, TrainerConfig& c) {
  const GptSpec& g = s.model.gpt;
  model::GptConfig& m = c.gpt;
  // vocabSize 0 (text only, the gate says): the bytes' vocabulary.
  m.vocabSize = g.vocabSize > 0 ? g.vocabSize : static_cast<int>(tokens::kByteVocabSize);
  m.contextLength = g.contextLength;
  m.layers = g.layers;
  m.heads = g.heads;
  m.dModel = g.dModel;
  m.mlpHidden = g.mlpHidden;
  m.norm = g.norm == GptNorm::kRmsNorm ? model::GptNormKind::kRmsNorm : model::GptNormKind::kLayerNorm;
  m.rope = g.positions == GptPositions::kRope;
  m.tiedEmbeddings = g.tiedEmbeddings;
  m.dropout = static_cast<float>(g.dropout);
  m.precision = s.precision == ComputePrecision::kBf16 ? model::GptPrecision::kBf16 : model::GptPrecision::kFp32;
}

void adaptModel(const JobSpec& s, TrainerConfig& c) {
  c.model = s.model.type;
  if (s.model.type == ModelType::kGpt) {
    adaptGpt(s, c);
    return;
  }
  c.loss = s.loss;
  kernels::Activation act = kernels::Activation::kRelu;
  (void)kernels::parseActivation(s.model.activation, &act);  // the field table: relu, tanh or gelu
  const bool synthetic = s.data.dataset == DatasetKind::kSynthetic;
  const int64_t features = synthetic ? s.data.synthetic.features : 784;
  const int classes = synthetic ? s.data.synthetic.classes : 10;
  if (s.model.type == ModelType::kSequential) {
    c.stack = s.model.stack;
    c.stackInput = datasetSampleShape(s).value_or(model::Shape{});
  } else if (s.model.type == ModelType::kMlp) {
    c.mlp.inputs = features;
    c.mlp.hidden = s.model.hidden;
    c.mlp.classes = classes;
    c.mlp.activation = act;
  } else {
    c.cnn.input = {1, 28, 28};
    c.cnn.convChannels.assign(s.model.convChannels.begin(), s.model.convChannels.end());
    c.cnn.kernel = s.model.kernelSize;
    c.cnn.hidden = s.model.hidden;
    c.cnn.classes = classes;
    c.cnn.activation = act;
  }
}

datafiles::SplitFiles splitFiles(const DataSplitSpec& s) { return {s.path, s.features, s.targets}; }

// idx, npy, csv (docs/DATA.md): the model's widths follow the data once it is loaded
// (fitModelToData).
void adaptUserData(const JobSpec& s, TrainerConfig& c) {
  data::UserDataConfig& u = c.userData;
  u.files.format = s.data.dataset == DatasetKind::kIdx   ? datafiles::UserDataFormat::kIdx
                   : s.data.dataset == DatasetKind::kNpy ? datafiles::UserDataFormat::kNpy
                                                         : datafiles::UserDataFormat::kCsv;
  u.files.train = splitFiles(s.data.train);
  u.files.val = splitFiles(s.data.val);
  u.files.target = s.data.target;
  u.files.regression = s.loss == LossType::kMse;
  u.classes = s.data.classes;
  u.valFraction = s.data.valFraction;
  u.trainLimit = s.data.limit;
  u.valLimit = s.eval.limit;
  u.standardizeAuto = s.data.standardize.automatic;
  u.standardizeMean = s.data.standardize.mean;
  u.standardizeStd = s.data.standardize.std;
}

void adaptData(const JobSpec& s, TrainerConfig& c) {
  const bool synthetic = s.data.dataset == DatasetKind::kSynthetic;
  c.data = s.data.dataset;
  c.dataDir = s.data.dir;
  c.normalize = s.data.normalize;
  c.trainLimit = s.data.limit;
  c.testLimit = s.eval.limit;
  c.shuffle = s.data.shuffle;
  if (synthetic) {
    c.synthetic.samples = s.data.synthetic.samples;
    c.synthetic.sampleShape = s.model.type == ModelType::kCnn ? std::vector<int64_t>{1, 28, 28}
                                                              : std::vector<int64_t>{s.data.synthetic.features};
    c.synthetic.classes = s.data.synthetic.classes;
    c.synthetic.separation = static_cast<float>(s.data.synthetic.separation);
    c.synthetic.noise = static_cast<float>(s.data.synthetic.noise);
    c.synthetic.seed = s.seed;
    c.syntheticTestSamples = std::max<int64_t>(1, s.data.synthetic.samples / 4);
  }
  c.samplerMode = s.data.dropLast ? data::SamplerMode::kDropLast : data::SamplerMode::kPad;
  if (s.data.uneven.enabled) {
    c.samplerMode = data::SamplerMode::kUneven;
    c.unevenCounts = s.data.uneven.counts;
  }
  c.batchSize = s.data.batchSize;
  c.nominalWorldSize = s.workers.count;
  c.keepGlobalBatch = s.elastic.keepGlobalBatch;
  c.globalBatch = s.data.globalBatchSize;
  c.epochs = static_cast<int>(s.epochs);
  c.maxSteps = s.steps;
  c.gradAccumulation = s.gradientAccumulationSteps;
  c.evalEachEpoch = s.eval.everyEpoch;
  c.evalBatchSize = s.eval.batchSize;
  c.evalEverySteps = s.eval.everySteps;
  if (c.fromUserFiles()) adaptUserData(s, c);
  if (s.data.dataset == DatasetKind::kTokens || s.data.dataset == DatasetKind::kText) {
    c.trainTokens = {s.data.train.path, s.data.train.dtype};
    c.valTokens = {s.data.val.path, s.data.val.dtype};
    c.valFraction = s.data.valFraction;
  }
}

void adaptOptimizer(const JobSpec& s, TrainerConfig& c) {
  const OptimizerSpec& o = s.optimizer;
  switch (o.type) {
    case OptimizerType::kSgd:
      c.optimizer = optim::OptimizerConfig::sgd(static_cast<float>(o.lr), static_cast<float>(o.momentum),
                                                static_cast<float>(o.dampening), static_cast<float>(o.weightDecay),
                                                o.nesterov);
      break;
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW: {
      auto make = o.type == OptimizerType::kAdam ? &optim::OptimizerConfig::adam : &optim::OptimizerConfig::adamw;
      c.optimizer = make(static_cast<float>(o.lr), static_cast<float>(o.beta1), static_cast<float>(o.beta2),
                         static_cast<float>(o.eps), static_cast<float>(o.weightDecay));
      break;
    }
  }
  c.maxGradNorm = o.maxGradNorm;
  const ScheduleSpec& sch = o.schedule;
  switch (sch.type) {
    case ScheduleType::kConstant: c.lr.kind = LrScheduleKind::kConstant; break;
    case ScheduleType::kStep: c.lr.kind = LrScheduleKind::kStep; break;
    case ScheduleType::kCosine: c.lr.kind = LrScheduleKind::kCosine; break;
    case ScheduleType::kLinear: c.lr.kind = LrScheduleKind::kLinear; break;
  }
  c.weightDecayOn = o.weightDecayOn;
  c.lr.warmupSteps = sch.warmupSteps;
  c.lr.stepSize = sch.stepSize;
  c.lr.gamma = sch.gamma;
  c.lr.minLr = sch.minLr;
  c.lr.baseLr = o.lr;
}

void adaptCommunication(const JobSpec& s, TrainerConfig& c) {
  c.hook = s.commHook.type;
  c.hookWrapper = s.commHook.wrapper;
  const PowerSgdSpec& p = s.commHook.powerSGD;
  c.powerSgd.matrixApproximationRank = p.rank;
  c.powerSgd.startPowerSgdIter = p.startIter;
  c.powerSgd.minCompressionRate = p.minCompressionRate;
  c.powerSgd.useErrorFeedback = p.errorFeedback;
  c.powerSgd.warmStart = p.warmStart;
  c.powerSgd.orthogonalizationEpsilon = static_cast<float>(p.orthogonalizationEpsilon);
  c.powerSgd.randomSeed = p.seed;
  c.powerSgd.batchTensorsWithSameShape = p.batchTensorsWithSameShape;
  c.bucketCapMb = s.bucketCapMb;
  c.firstBucketMb = s.firstBucketMb;
  c.gradientAsBucketView = s.gradientAsBucketView;
  c.sharding = s.zero;
  c.join = s.join.enabled;
  c.joinThrow = s.join.throwOnEarlyTermination;
  c.joinDivideByInitialWorldSize = s.join.divideByInitialWorldSize;
  c.collectiveTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s.timeouts.collectiveSeconds));
  c.commThreadPriority = s.commThreadPriority;  // the worker's own setting overrides it (worker_entry.cc)
}

}  // namespace

Result<JobSpec> jobSpecOfAssignment(int specSchema, std::string_view specYaml) {
  if (specSchema != kJobSpecSchemaVersion) {
    return failedPrecondition("the controller sends job spec schema " + std::to_string(specSchema) +
                              " and this worker reads schema " + std::to_string(kJobSpecSchemaVersion) +
                              ": run workers built from the same release as the controller (worker image or binary)");
  }
  return decodeJobSpec(specYaml);
}

Result<TrainerConfig> trainerConfigFromJobSpec(const JobSpec& s) {
  // Note [Validated once] (job_spec.h): `s` passed the gate; it is not validated again here. A
  // valid spec makes a valid TrainerConfig (Note [Trainer refusals]), which the Trainer checks
  // as its own precondition.
  TrainerConfig c;
  c.job = s.name.empty() ? "job" : s.name;
  c.seed = s.seed;
  // cuda:0 here; the worker picks its rank's GPU (worker_entry.cc).
  c.device = s.device == JobDevice::kCuda ? Device::cuda(0) : Device::cpu();
  c.mixedPrecision = s.mixedPrecision;
  c.cpuThreads = s.threadsPerWorker;
  adaptModel(s, c);
  adaptData(s, c);
  adaptOptimizer(s, c);
  adaptCommunication(s, c);
  c.checkpointDir = s.checkpoint.dir;
  c.initFrom = s.init.from;
  c.checkpointEverySteps = s.checkpoint.everySteps;
  c.keepCheckpoints = s.checkpoint.keep;
  c.checkpointEachEpoch = false;
  c.checkpointAtEnd = true;
  // What depends on the build.
  if (c.device.isCuda() && !comm::ncclBackendAvailable()) {
    return unimplemented("spec.device: cuda is not available: this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
  }
  return c;
}

}  // namespace ddp::runtime
