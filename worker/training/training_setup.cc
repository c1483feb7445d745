#include "worker/training/training_setup.h"

#include "common/log.h"
#include "kernels/layer_ops.h"
#include "worker/comm/nccl_backend.h"
#include "worker/data/fashion_mnist.h"
#include "worker/data/synthetic_dataset.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/powersgd_hook.h"
#include "worker/ddp/powersgd_state.h"
#include "common/tokens/byte_tokens.h"
#include "common/tokens/token_file.h"
#include "worker/model/cnn.h"
#include "worker/model/gpt.h"
#include "worker/model/mlp.h"
#include "worker/optim/grad_norm.h"

namespace ddp::runtime {

namespace {

std::optional<tokens::TokenDType> rawDType(const std::string& name) {
  if (name.empty()) return std::nullopt;
  auto t = tokens::parseTokenDType(name);
  return t.isOk() ? std::optional<tokens::TokenDType>(*t) : std::nullopt;
}

// One split's tokens: the mapped files (tokens) or the files' bytes (text).
Result<data::TokenSource> openTokens(const TrainerConfig& c, const TrainerConfig::TokenFiles& f) {
  if (c.data == DatasetKind::kText) {
    DDP_ASSIGN_OR_RETURN(std::vector<std::string> files, tokens::expandTokenPaths(f.path));
    DDP_ASSIGN_OR_RETURN(std::vector<int32_t> bytes, tokens::bytesToTokens(files));
    return data::TokenSource::inMemory(std::move(bytes));
  }
  if (!f.rawDType.empty()) DDP_RETURN_IF_ERROR(tokens::parseTokenDType(f.rawDType).status());
  DDP_ASSIGN_OR_RETURN(tokens::MappedTokens mapped, tokens::MappedTokens::open(f.path, rawDType(f.rawDType)));
  auto shared = std::make_shared<const tokens::MappedTokens>(std::move(mapped));
  const int64_t n = shared->size();
  return data::TokenSource::mapped(std::move(shared), 0, n);
}

Result<TrainingData> loadTokenData(const TrainerConfig& c) {
  TrainingData d;
  const int64_t window = int64_t{c.gpt.contextLength} + 1;
  auto train = openTokens(c, c.trainTokens);
  if (!train.isOk()) return train.status().withContext("spec.data.train");
  if (!c.valTokens.path.empty()) {
    auto val = openTokens(c, c.valTokens);
    if (!val.isOk()) return val.status().withContext("spec.data.val");
    d.trainTokens = std::move(*train);
    d.valTokens = std::move(*val);
    if (d.valTokens.size() < window) {
      return invalidArgument("spec.data.val: " + std::to_string(d.valTokens.size()) +
                             " tokens, fewer than one window of contextLength + 1 = " + std::to_string(window));
    }
  } else {
    // The last valFraction of the training tokens (the rule of `ddpctl tokenize`).
    const int64_t n = train->size();
    const int64_t val = tokens::valTokenCount(n, c.valFraction);
    if (val > 0 && val < window) {
      return invalidArgument("spec.data.valFraction: " + std::to_string(val) + " of " + std::to_string(n) +
                             " tokens held out, fewer than one window of contextLength + 1 = " + std::to_string(window));
    }
    d.trainTokens = train->slice(0, n - val);
    if (val > 0) d.valTokens = train->slice(n - val, val);
  }
  if (d.trainTokens.size() < window) {
    return invalidArgument("spec.data.train: " + std::to_string(d.trainTokens.size()) +
                           " training tokens, fewer than one window of contextLength + 1 = " + std::to_string(window));
  }
  return d;
}

}  // namespace

Result<TrainingData> loadTrainingData(const TrainerConfig& c) {
  if (c.languageModel()) return loadTokenData(c);
  TrainingData d;
  if (c.fromUserFiles()) {
    DDP_ASSIGN_OR_RETURN(data::UserData u, data::loadUserData(c.userData));
    d.train = std::move(u.train);
    d.test = std::move(u.val);
    d.standardization = std::move(u.standardization);
    return d;
  }
  if (c.data == DatasetKind::kSynthetic) {
    data::SyntheticConfig train = c.synthetic;
    DDP_ASSIGN_OR_RETURN(d.train, data::makeSyntheticDataset(train, data::SyntheticSplit::kTrain));
    data::SyntheticConfig test = c.synthetic;
    test.samples = c.syntheticTestSamples;
    DDP_ASSIGN_OR_RETURN(d.test, data::makeSyntheticDataset(test, data::SyntheticSplit::kTest));
  } else {
    data::FashionMnistOptions o;
    if (!c.dataDir.empty()) o.dir = c.dataDir;
    o.limit = c.trainLimit;
    o.normalize = c.normalize;
    auto train = data::loadFashionMnist(data::Split::kTrain, o);
    if (!train.isOk()) return train.status().withContext("data (training split)");
    d.train = std::move(*train);
    o.limit = c.testLimit;
    auto test = data::loadFashionMnist(data::Split::kTest, o);
    if (!test.isOk()) return test.status().withContext("data (test split)");
    d.test = std::move(*test);
  }
  if (c.data == DatasetKind::kSynthetic) {
    if (c.trainLimit > 0) d.train = d.train.head(c.trainLimit);
    if (c.testLimit > 0) d.test = d.test.head(c.testLimit);
  }
  return d;
}

// A declared stack on a user's files: its input is the samples' shape, and it must end in the
// outputs the targets need (Note [Declared layer stacks]).
Status fitStackToData(TrainerConfig& c, const data::Dataset& t, int64_t outputs) {
  c.stackInput = t.sampleShape;
  const StackShapes shapes = inferStackShapes(c.stack, c.stackInput);
  if (!shapes.ok()) {
    return invalidArgument(shapes.errorPath + ": " + shapes.error + " (the samples of " + t.name + " are " +
                           shapeText(t.sampleShape) + ")");
  }
  if (shapes.output() != std::vector<int64_t>{outputs}) {
    return invalidArgument("spec.model.stack: ends in " + shapeText(shapes.output()) + " but " +
                           (c.loss == LossType::kMse ? std::string("mse needs [1]: one float target per sample")
                                                     : "the data has " + std::to_string(outputs) + " classes") +
                           " (the last layer's out)");
  }
  return Status::ok();
}

Status fitModelToData(TrainerConfig& c, const TrainingData& d) {
  // A declared stack on data whose sample shape only its files tell: the shapes are checked when
  // the model is built, before the first step (buildSequential names the layer that does not fit).
  if (c.model == ModelType::kSequential && c.stackInput.empty()) c.stackInput = d.train.sampleShape;
  if (!c.fromUserFiles()) return Status::ok();
  const data::Dataset& t = d.train;
  const bool mse = c.loss == LossType::kMse;
  if (t.floatTargets && !mse) {
    return invalidArgument("spec.loss: " + t.name + " holds float targets (regression): train them with spec.loss: " +
                           "mse, or give integer class labels ('<i4' or '<i8')");
  }
  if (mse && !t.floatTargets) {
    return invalidArgument("spec.loss: mse needs float targets, but " + t.name +
                           " holds class labels (save the targets as '<f4' or '<f8')");
  }
  const int64_t outputs = mse ? 1 : t.classes;  // mse: one float target per sample
  const std::string shape = datafiles::shapeText(t.sampleShape);
  if (c.model == ModelType::kMlp) {
    c.mlp.inputs = t.sampleNumel();
    c.mlp.classes = outputs;
  } else if (c.model == ModelType::kCnn) {
    const bool image = t.sampleShape == std::vector<int64_t>{1, 28, 28} || t.sampleShape == std::vector<int64_t>{28, 28};
    if (!image) {
      return invalidArgument("spec.model.type: cnn takes 1x28x28 images, but the samples of " + t.name + " are " + shape +
                             " (save the features as (N, 1, 28, 28), or use an mlp)");
    }
    c.cnn.classes = outputs;
  } else if (c.model == ModelType::kSequential) {
    return fitStackToData(c, t, outputs);
  }
  return Status::ok();
}

Status checkTrainingDevice(const TrainerConfig& c, const comm::Backend& backend) {
  if (c.device.isCpu()) return Status::ok();
  DDP_RETURN_IF_ERROR(c.validateDevice());
  const std::string dev = c.device.toString();
  if (!comm::ncclBackendAvailable()) {
    return unimplemented("spec.device: cuda (" + dev + ") but this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
  }
  const int count = kernels::cudaDeviceCount();
  if (count == 0) {
    return unavailable("spec.device: cuda: no CUDA device is visible to this worker (wanted " + dev +
                       "; check the GPU, its driver and CUDA_VISIBLE_DEVICES)");
  }
  if (c.device.index < 0 || c.device.index >= count) {
    return invalidArgument("spec.device: cuda: " + dev + " does not exist (" + std::to_string(count) + " visible)");
  }
  if (!backend.supportsDevice(DeviceType::kCuda)) {
    return invalidArgument("spec.device: cuda: the backend " + backend.name() +
                           " carries no CUDA buffers (train over a process group of gloo and nccl)");
  }
  return Status::ok();
}

Result<std::unique_ptr<model::TrainableModel>> buildModel(const TrainerConfig& c) {
  model::ModelOptions o;
  o.device = c.device;
  o.seed = c.seed;
  o.cpuThreads = c.cpuThreads;
  if (c.model == ModelType::kGpt) {
    DDP_ASSIGN_OR_RETURN(auto ops, model::makeLayerOps(o));
    DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::Gpt> gpt, model::Gpt::create(c.gpt, std::move(ops), c.seed));
    return std::unique_ptr<model::TrainableModel>(std::move(gpt));
  }
  if (c.model == ModelType::kSequential) {
    DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::Sequential> seq, model::buildSequential(c.stack, c.stackInput, o));
    return std::unique_ptr<model::TrainableModel>(std::move(seq));
  }
  if (c.model == ModelType::kMlp) {
    DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::Sequential> mlp, model::buildMlp(c.mlp, o));
    return std::unique_ptr<model::TrainableModel>(std::move(mlp));
  }
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::Sequential> cnn, model::buildCnn(c.cnn, o));
  return std::unique_ptr<model::TrainableModel>(std::move(cnn));
}

std::vector<bool> weightDecayMask(const TrainerConfig& c, const std::vector<Parameter*>& params) {
  if (c.weightDecayOn == WeightDecayOn::kAll) return {};
  std::vector<bool> mask;
  mask.reserve(params.size());
  for (const Parameter* p : params) {
    const bool embedding = p->name.rfind("embed.", 0) == 0;
    const bool weight = p->name.size() >= 7 && p->name.compare(p->name.size() - 7, 7, ".weight") == 0;
    mask.push_back(p->shape.size() == 2 && weight && !embedding);
  }
  return mask;
}

Result<std::unique_ptr<CommHook>> buildCommHook(const TrainerConfig& c, comm::Backend& backend) {
  std::unique_ptr<CommHook> hook;
  switch (c.hook) {
    case CommHookType::kAllreduce:
      hook = std::make_unique<AllreduceHook>(backend);
      break;
    case CommHookType::kFp16:
      hook = std::make_unique<CompressHook>(backend, DType::kF16);
      break;
    case CommHookType::kBf16:
      hook = std::make_unique<CompressHook>(backend, DType::kBF16);
      break;
    case CommHookType::kPowerSgd: {
      DDP_ASSIGN_OR_RETURN(hook, PowerSgdHook::create(backend, c.powerSgd));
      break;
    }
    case CommHookType::kBatchedPowerSgd: {
      DDP_ASSIGN_OR_RETURN(hook, BatchedPowerSgdHook::create(backend, c.powerSgd));
      break;
    }
    case CommHookType::kNoop:  // TrainerConfig::validate refuses it
      return invalidArgument("spec.commHook.type: noop leaves gradients unreduced (debugging only); the trainer refuses it");
  }
  if (c.hookWrapper == HookWrapper::kFp16) hook = std::make_unique<HalfWrapperHook>(std::move(hook), DType::kF16);
  if (c.hookWrapper == HookWrapper::kBf16) hook = std::make_unique<HalfWrapperHook>(std::move(hook), DType::kBF16);
  return hook;
}

ReducerOptions makeReducerOptions(const TrainerConfig& c) {
  ReducerOptions o;
  o.bucketCapBytes = static_cast<size_t>(c.bucketCapMb * 1024 * 1024);
  o.firstBucketCapBytes = std::min(static_cast<size_t>(c.firstBucketMb * 1024 * 1024), o.bucketCapBytes);
  o.gradientAsBucketView = c.gradientAsBucketView;
  if (c.mixedPrecision == MixedPrecision::kFp16) o.reduceDtype = DType::kF16;
  if (c.mixedPrecision == MixedPrecision::kBf16) o.reduceDtype = DType::kBF16;
  // Note [Deterministic buckets]: the rebuild after the first step would give a resumed run
  // (which starts with the initial layout) a different bucket layout for one step than the
  // uninterrupted run; with more than two ranks the ring's summation order follows the layout,
  // so bitwise resume needs a fixed layout. Built-in models mark gradients ready in exact
  // reverse registration order, which is the initial plan already: nothing is lost.
  o.rebuildBuckets = false;
  o.timeout = c.collectiveTimeout;
  o.commThreadPriority = c.commThreadPriority;
  return o;
}

Result<std::unique_ptr<OptimizerRunner>> OptimizerRunner::create(const TrainerConfig& c,
                                                                 std::vector<Parameter*> params,
                                                                 comm::Backend& backend) {
  auto r = std::unique_ptr<OptimizerRunner>(new OptimizerRunner());
  switch (c.sharding) {
    case ZeroMode::kNone: {
      std::vector<bool> mask = weightDecayMask(c, params);
      DDP_ASSIGN_OR_RETURN(r->plain_, optim::makeOptimizer(c.optimizer, std::move(params)));
      r->plain_->setWeightDecayMask(std::move(mask));
      r->maxGradNorm_ = c.maxGradNorm;
      break;
    }
    case ZeroMode::kZero1: {
      std::vector<bool> mask = weightDecayMask(c, params);
      DDP_ASSIGN_OR_RETURN(r->zero_, optim::ZeroRedundancyOptimizer::create(std::move(params), backend, c.optimizer));
      DDP_RETURN_IF_ERROR(r->zero_->setWeightDecayMask(mask));
      r->zero_->setMaxGradNorm(c.maxGradNorm);
      break;
    }
    case ZeroMode::kDfa: {
      optim::DistributedFusedAdamOptions o;
      o.config = c.optimizer;
      o.maxGradNorm = static_cast<float>(c.maxGradNorm);
      o.weightDecayMask = weightDecayMask(c, params);
      DDP_ASSIGN_OR_RETURN(r->dfa_, optim::DistributedFusedAdam::create(std::move(params), backend, o));
      break;
    }
  }
  return r;
}

void OptimizerRunner::setLr(double lr) {
  if (plain_) plain_->setLr(static_cast<float>(lr));
  if (zero_) zero_->setLr(static_cast<float>(lr));
  if (dfa_) dfa_->setLr(static_cast<float>(lr));
}

Status OptimizerRunner::step(Deadline deadline) {
  if (plain_) {
    float gradScale = 1.f;
    if (maxGradNorm_ > 0) {
      // Gradients are identical on every rank after the reduction, so the global norm is local.
      DDP_ASSIGN_OR_RETURN(double norm, optim::globalGradNorm(plain_->parameters()));
      gradScale = optim::clipCoefficient(norm, maxGradNorm_);
    }
    return plain_->step(gradScale);
  }
  if (zero_) return zero_->step(deadline);
  return dfa_->step(deadline);
}

Result<std::string> OptimizerRunner::saveState(Deadline deadline) {
  if (plain_) return plain_->hostStateDict();
  if (zero_) return zero_->localStateDict();
  return dfa_->stateDict(0, deadline);
}

Result<std::function<std::string()>> OptimizerRunner::snapshotState(Deadline deadline) {
  if (plain_) {
    DDP_ASSIGN_OR_RETURN(optim::OptimizerState st, plain_->hostState());
    return std::function<std::string()>([st = std::move(st)] { return st.encode(); });
  }
  DDP_ASSIGN_OR_RETURN(std::string encoded, saveState(deadline));
  return std::function<std::string()>([encoded = std::move(encoded)] { return encoded; });
}

Status OptimizerRunner::loadState(const std::vector<std::string>& states, int rank) {
  if (states.empty()) return dataLoss("checkpoint has no optimizer state");
  if (plain_) return plain_->loadStateDict(states[static_cast<size_t>(rank) < states.size() ? rank : 0]);
  if (zero_) return zero_->loadShardStateDicts(states);
  if (states.empty() || states[0].empty()) return dataLoss("checkpoint has no DistributedFusedAdam state on rank 0");
  return dfa_->loadStateDict(states[0]);
}

Result<std::string> commHookStateForWorld(const TrainerConfig& c, const std::vector<std::string>& saved, int rank,
                                          int world) {
  if (saved.empty()) return dataLoss("checkpoint has no comm hook state");
  const std::string& own = saved[static_cast<size_t>(rank) < saved.size() ? rank : 0];
  const bool powerSgd = c.hook == CommHookType::kPowerSgd || c.hook == CommHookType::kBatchedPowerSgd;
  if (static_cast<int>(saved.size()) == world || !powerSgd ||
      c.powerSgd.worldSizeChangePolicy != WorldSizeChangePolicy::kRedistributeErrorFeedback) {
    return own;
  }
  std::vector<PowerSgdState> states;
  for (size_t r = 0; r < saved.size(); ++r) {
    auto s = PowerSgdState::deserialize(saved[r]);
    if (!s.isOk()) return s.status().withContext("comm hook state of saved rank " + std::to_string(r));
    states.push_back(std::move(*s));
  }
  size_t dropped = 0;
  DDP_ASSIGN_OR_RETURN(PowerSgdState mine, redistributeErrorFeedback(states, rank, world, &dropped));
  size_t carried = 0;
  for (const auto& [key, t] : mine.tensors) carried += !t.error.empty();
  if (rank == 0) {
    DDP_LOG(Info) << "PowerSGD state saved at world size " << saved.size() << ", loaded at " << world
                  << ": iteration " << mine.iteration << ", RNG and Q memories kept; the average error feedback of "
                  << carried << " tensors given to every rank"
                  << (dropped > 0 ? ", " + std::to_string(dropped) + " reset (shapes differ between ranks)" : "");
  }
  return mine.serialize();
}

}  // namespace ddp::runtime
