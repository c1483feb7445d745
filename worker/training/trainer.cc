// Trainer::Impl's setup (data, model, reducer, optimizer, sampler, step counts; Note [Elastic
// batch]), evaluation and progress observer, and the Trainer's public face. The step loop is in
// trainer_loop.cc, the checkpoint side in trainer_checkpoints.cc (trainer_impl.h).
#include "worker/training/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "common/log.h"
#include "worker/ddp/powersgd_hook_base.h"
#include "worker/model/module.h"
#include "worker/training/model_flops.h"
#include "worker/training/safetensors_weights.h"
#include "worker/training/trainer_impl.h"

namespace ddp::runtime {

// Note [CUDA training]
// With config.device cuda (spec.device: cuda) the same step loop runs on one GPU per rank:
//  - the model is built on the device (kernels::makeCudaLayerOps: cuBLAS and the CUDA layer
//    kernels, each with a CPU twin); Module::forwardBackward uploads each host batch and reads
//    the loss and accuracy sums back; evaluation does the same per evaluation batch;
//  - the reducer's buckets live on the device and the backend routes them to NCCL; the stop
//    flag, the evaluation sums and the checkpoint coordination are host buffers and go to Gloo
//    (comm::ProcessGroup, built by worker_entry.cc);
//  - the optimizer keeps its state on the device and steps with the CUDA kernels
//    (Note [Device-resident optimizer state] in worker/optim/optimizer.h); clipping reduces the
//    gradient norm per tensor on the device (worker/optim/grad_norm.h);
//  - checkpoints hold host copies (model through LayerOps, optimizer through hostStateDict), in
//    the CPU format: a CPU checkpoint resumes on CUDA and the other way round.
// Refused up front (TrainerConfig::validateDevice): zero1, dfa, join, powerSGD and
// batchedPowerSGD, whose state or collectives are host-only today. A CUDA run is not bitwise
// equal to a CPU run (cuBLAS sums in another order); it follows it within float tolerance.
//
// Note [CUDA gradient readiness]
// The CUDA layer ops compute on their own non-blocking stream, while the reducer's bucket
// kernels run on the legacy default stream and NCCL waits for that stream only
// (Note [NCCL streams and completion]). A gradient the model has reported ready may therefore
// still be in flight on the model's stream. The trainer wraps the reducer's GradReadyFn so it
// synchronises the model's stream before passing each index on, and synchronises once more
// before the optimizer step and the norm computation. The cost is one stream synchronisation
// per parameter per micro-batch (the GPU keeps the queued work; only the host waits).


CompressionStats Trainer::Impl::compressionStats() const {
  const auto* hook = reducer ? dynamic_cast<const PowerSgdHookBase*>(reducer->commHook()) : nullptr;
  return hook != nullptr ? hook->compressionStats() : CompressionStats{};
}

void Trainer::Impl::publishProgress() {
  if (!io.onProgress) return;
  progress.step = state.step;
  progress.totalSteps = totalSteps;
  progress.epoch = state.epoch;
  progress.epochs = config.epochs;
  if (reducer) {
    const CompressionStats c = compressionStats();
    progress.compressionUncompressedBytes = static_cast<int64_t>(c.bytesBeforeCompression - compressionBase.bytesBeforeCompression);
    progress.compressionSentBytes = static_cast<int64_t>(c.bytesAfterCompression - compressionBase.bytesAfterCompression);
    const ReducerStats rs = reducer->stats();
    int64_t perStep = 0;
    for (size_t b = 0; b < reducer->plan().numBuckets(); ++b) perStep += static_cast<int64_t>(reducer->bucketBuffer(b).bytes());
    progress.commBytes = static_cast<int64_t>(rs.syncedSteps + rs.shadowSteps) * perStep -
                         (progress.compressionUncompressedBytes - progress.compressionSentBytes);
  }
  io.onProgress(progress);
}

void Trainer::Impl::observeStep(const StepTimings& t, int64_t samplesHere, int64_t tokensHere, double loss) {
  if (!io.onProgress) return;
  progress.loss = loss;
  progress.samples = samplesHere;
  progress.steps = t.steps;
  progress.stepSeconds = t.compute + t.exposedComm + t.optimizer + t.data;
  progress.commExposedSeconds = t.exposedComm;
  progress.samplesPerSecond =
      progress.stepSeconds > 0 ? static_cast<double>(samplesHere) * backend.size() / progress.stepSeconds : 0;
  if (config.languageModel()) {
    progress.tokensPerSecond =
        progress.stepSeconds > 0 ? static_cast<double>(tokensHere) * backend.size() / progress.stepSeconds : 0;
    if (peakFlops > 0 && *progress.tokensPerSecond > 0) {
      progress.mfu = modelFlopsUtilisation(flopsPerToken, *progress.tokensPerSecond, backend.size(), peakFlops);
    }
  }
  publishProgress();
}

void Trainer::Impl::observeEval(double accuracy, std::optional<double> valLoss) {
  progress.testAccuracy = accuracy;
  if (valLoss) progress.valLoss = valLoss;
  publishProgress();
}

void Trainer::Impl::observeCheckpoint(const CheckpointShard& shard, const std::string& path) {
  int64_t bytes = 0;
  for (const auto& [name, section] : shard.sections) bytes += static_cast<int64_t>(section.size());
  progress.checkpoint = TrainingProgress::Checkpoint{shard.step, bytes, path};
  publishProgress();
}

// Note [Elastic batch]
// spec.data.batchSize is per worker at the nominal world size (spec.workers.count), so the
// global batch is B = batchSize x count, or spec.data.globalBatchSize when set (the controller
// pins it there before a scale changes count, so a scaled job keeps the batch it was submitted
// with); the nominal world size is then B / batchSize. A generation with another world size W
// (an elastic job that shrank or grew) follows spec.elastic.keepGlobalBatch:
//  - true (default): B stays, split over the W ranks: B / W each and one more for the first
//    B mod W ranks (the rounding rule; with B < W every rank takes 1 and B grows to W, said
//    once). Unequal shares read the data in blocks of B (Note [Elastic sampler]), and each
//    rank's loss gradient is weighted by W x (its samples) / (the block's samples), so the
//    allreduce average is the mean over the block's samples, exactly as at the nominal size.
//    The LR schedule is unchanged: one step is one step of B samples.
//  - false: the per-worker batch stays (the global batch becomes batchSize x W) and the
//    learning rate scales linearly, by W / count; the schedule advances W / count of a step per
//    step (TrainerState::scheduleStep), so warmup and step decay follow the samples seen.
// Steps per epoch follow the split; a run resumed at another world size recounts the steps
// left (stepsToEnd).
void Trainer::Impl::planBatch() {
  const int world = backend.size();
  const int64_t global =
      config.globalBatch > 0 ? config.globalBatch
                             : int64_t{config.batchSize} * (config.nominalWorldSize > 0 ? config.nominalWorldSize : world);
  // The reference world size: the one the global batch is batchSize per worker at.
  const double nominal = static_cast<double>(global) / config.batchSize;
  localBatch = config.batchSize;
  shares.clear();
  lrScale = 1.0;
  scheduleIncrement = 1.0;
  if (global == int64_t{config.batchSize} * world || config.samplerMode == data::SamplerMode::kUneven) return;
  if (!config.keepGlobalBatch) {
    lrScale = static_cast<double>(world) / nominal;
    scheduleIncrement = lrScale;
    if (isRank0()) {
      DDP_LOG(Info) << "world size " << world << " (nominal " << nominal << "): " << config.batchSize
                    << " samples per worker, global batch " << int64_t{config.batchSize} * world
                    << ", learning rate x " << lrScale << " (spec.elastic.keepGlobalBatch false)";
    }
    return;
  }
  if (global < world) {
    localBatch = 1;
    scheduleIncrement = static_cast<double>(world) / static_cast<double>(global);
    if (isRank0()) {
      DDP_LOG(Warning) << "world size " << world << " exceeds the global batch " << global
                       << ": every worker takes 1 sample, global batch " << world;
    }
    return;
  }
  for (int r = 0; r < world; ++r) shares.push_back(global / world + (r < global % world ? 1 : 0));
  localBatch = static_cast<int>(shares[static_cast<size_t>(backend.rank())]);
  if (global % world == 0) shares.clear();  // equal: the strided layout
  if (isRank0()) {
    DDP_LOG(Info) << "world size " << world << " (nominal " << nominal << "): global batch " << global << " kept, "
                  << global / world << (global % world != 0 ? " or " + std::to_string(global / world + 1) : "")
                  << " samples per worker";
  }
}

int64_t Trainer::Impl::stepsToEnd() const {
  if (!sampler) return config.maxSteps;  // language models: spec.steps, at any world size
  const int64_t micro = config.gradAccumulation;
  const int64_t batchesLeft = (sampler->remaining() + localBatch - 1) / localBatch;
  const int64_t laterEpochs = std::max<int64_t>(0, config.epochs - state.epoch - 1);
  int64_t steps = state.step + (batchesLeft + micro - 1) / micro + stepsPerEpoch * laterEpochs;
  if (config.maxSteps > 0) steps = std::min(steps, config.maxSteps);
  return steps;
}

Status Trainer::Impl::setup() {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_RETURN_IF_ERROR(checkTrainingDevice(config, backend));
  DDP_RETURN_IF_ERROR(setupCheckpoints());
  if (io.data) {
    data = io.data;
  } else if (io.loadData) {
    DDP_ASSIGN_OR_RETURN(data, io.loadData(config));
  } else {
    DDP_ASSIGN_OR_RETURN(TrainingData loaded, loadTrainingData(config));
    data = std::make_shared<const TrainingData>(std::move(loaded));
  }
  DDP_RETURN_IF_ERROR(setupModel());
  if (!config.initFrom.empty()) {  // a checkpoint resumed later overwrites these
    DDP_RETURN_IF_ERROR(loadWeightsFile(config.initFrom, *model).withContext("spec.init.from"));
  }
  planBatch();
  if (!config.languageModel()) model->reserve(std::max(localBatch, config.evalBatchSize));
  if (!model->device().isCpu()) {
    // The initial values were uploaded on the model's stream; the reducer's broadcast of rank 0's
    // parameters (NCCL) follows the default stream only (Note [CUDA gradient readiness]).
    DDP_RETURN_IF_ERROR(model->ops().synchronize().withContext("model on " + model->device().toString()));
  }
  if (const auto* m = dynamic_cast<const model::Module*>(model.get());
      m != nullptr && config.data == DatasetKind::kSynthetic && data->train.sampleNumel() != model::shapeNumel(m->inputShape())) {
    return invalidArgument("data.synthetic: sample shape does not match the model's input " +
                           model::shapeString(m->inputShape()));
  }
  DDP_RETURN_IF_ERROR(setupReduction());
  // Without a reducer (DistributedFusedAdam) nothing broadcasts rank 0's parameters: every rank
  // initialised them from the same seed, bitwise identical (worker/model/sequential.h).
  DDP_ASSIGN_OR_RETURN(optimizer, OptimizerRunner::create(config, model->parameters(), backend));
  DDP_RETURN_IF_ERROR(config.languageModel() ? setupWindows() : setupSchedule());
  if (config.languageModel() && io.onProgress) setupPeakFlops();
  state.seed = config.seed;
  state.worldSize = backend.size();
  state.batchSize = config.batchSize;
  return Status::ok();
}

Status Trainer::Impl::setupModel() {
  if (io.buildModel) {
    DDP_ASSIGN_OR_RETURN(model, io.buildModel(config, *data));
    if (model == nullptr) return invalidArgument("the trainer's model factory returned no model");
    if (const auto* m = dynamic_cast<const model::Module*>(model.get());
        m != nullptr && !config.languageModel() && data->train.sampleNumel() != model::shapeNumel(m->inputShape())) {
      return invalidArgument("the model's input " + model::shapeString(m->inputShape()) +
                             " does not match the data set's samples " + model::shapeString(data->train.sampleShape));
    }
    return Status::ok();
  }
  DDP_RETURN_IF_ERROR(fitModelToData(config, *data));
  DDP_ASSIGN_OR_RETURN(model, buildModel(config));
  return Status::ok();
}

Status Trainer::Impl::setupCheckpoints() {
  if (config.checkpointDir.empty()) return Status::ok();
  // Before the data and the model, and from the config as given (Note [Trajectory hash]): a
  // directory this job cannot write, locked by another job or holding another job's
  // checkpoints fails the start at once (Note [Checkpoint start checks]).
  checkpoints = std::make_unique<CheckpointCoordinator>(
      config.checkpointDir, backend, JobIdentity{config.job, trajectoryHash(config)}, config.keepCheckpoints);
  DDP_RETURN_IF_ERROR(checkpoints->prepare(opDeadline()));
  if (io.checkpointChannel != nullptr) {
    CheckpointWriterConfig wc;
    wc.commitTimeout = config.collectiveTimeout;
    wc.requestTimeout = std::min<Duration>(config.collectiveTimeout, std::chrono::seconds(10));
    wc.faults = io.faults;
    checkpoints->useChannel(*io.checkpointChannel, wc);
  }
  return Status::ok();
}

// The reducer and its comm hook (not with DistributedFusedAdam), and Join's joinable.
Status Trainer::Impl::setupReduction() {
  if (config.sharding != ZeroMode::kDfa) {
    DDP_ASSIGN_OR_RETURN(reducer, Reducer::create(backend, model->parameters(), makeReducerOptions(config)));
    DDP_ASSIGN_OR_RETURN(auto hook, buildCommHook(config, backend));
    DDP_RETURN_IF_ERROR(reducer->registerCommHook(std::move(hook)));
  }
  if (config.join) {
    ddpJoin = std::make_unique<DdpJoinable>(*reducer);
    if (config.checkpointEverySteps > 0) {
      DDP_LOG(Warning) << "spec.checkpoint.everySteps is ignored with Join (ranks reach a step at different times); "
                          "checkpoints are written at the end of the run and on stop";
      config.checkpointEverySteps = 0;
    }
  }
  return Status::ok();
}

Status Trainer::Impl::setupSchedule() {
  data::SamplerConfig sc;
  sc.datasetSize = data->train.size();
  sc.rank = backend.rank();
  sc.worldSize = backend.size();
  sc.shuffle = config.shuffle;
  sc.seed = config.seed;
  sc.mode = config.samplerMode;
  sc.unevenCounts = config.unevenCounts;
  sc.shares = shares;
  DDP_ASSIGN_OR_RETURN(auto s, data::DistributedSampler::create(sc));
  sampler.emplace(std::move(s));
  const int64_t batches = (sampler->numSamples() + localBatch - 1) / localBatch;
  stepsPerEpoch = (batches + config.gradAccumulation - 1) / config.gradAccumulation;
  if (stepsPerEpoch <= 0) return invalidArgument("spec.data: no training samples for rank " + std::to_string(backend.rank()));
  if (config.epochs == 0) {
    config.epochs = static_cast<int>((config.maxSteps + stepsPerEpoch - 1) / stepsPerEpoch);
  }
  totalSteps = stepsPerEpoch * config.epochs;
  if (config.maxSteps > 0) totalSteps = std::min(totalSteps, config.maxSteps);
  config.lr.baseLr = config.optimizer.lr;
  // The schedule runs in steps of the nominal global batch (Note [Elastic batch]): its length is
  // the run's at the nominal world size.
  config.lr.totalSteps = static_cast<int64_t>(std::ceil(static_cast<double>(totalSteps) * scheduleIncrement - 1e-9));
  return config.lr.validate().withContext("optimizer.schedule");
}

Status Trainer::Impl::setupWindows() {
  data::TokenWindowConfig wc;
  wc.totalTokens = data->trainTokens.size();
  wc.contextLength = config.gpt.contextLength;
  wc.seed = config.seed;
  wc.rank = backend.rank();
  wc.worldSize = backend.size();
  wc.batchPerRank = localBatch;
  wc.shares = shares;
  auto w = data::TokenWindowSampler::create(wc);
  if (!w.isOk()) return w.status().withContext("spec.data.train");
  windows.emplace(std::move(*w));
  config.epochs = 1;  // no epochs: the run is spec.steps steps
  stepsPerEpoch = config.maxSteps;
  totalSteps = config.maxSteps;
  config.lr.baseLr = config.optimizer.lr;
  config.lr.totalSteps = static_cast<int64_t>(std::ceil(static_cast<double>(totalSteps) * scheduleIncrement - 1e-9));
  return config.lr.validate().withContext("optimizer.schedule");
}

// docs/TRAINING.md, "Language-model figures": the CPU's peak is measured (an f32 GEMM, also for
// bf16, whose CPU twin multiplies bf16-rounded fp32 copies), a GPU's looked up by its name and
// the matmuls' precision (no MFU for a card the table does not know).
void Trainer::Impl::setupPeakFlops() {
  if (model->device().isCpu()) {
    auto peak = measureCpuPeakFlops(model->ops());
    if (!peak.isOk()) {
      DDP_LOG(Warning) << "no MFU: " << peak.status();
      return;
    }
    peakFlops = *peak;
  } else {
    // The peak of the precision the matmuls run in (Note [bf16 matmuls] in kernels/bf16_ops.h).
    const bool bf16 = config.gpt.precision == model::GptPrecision::kBf16;
    auto name = cudaDeviceName(model->device().index);
    const std::optional<double> peak =
        !name.isOk() ? std::nullopt : bf16 ? gpuPeakFlopsBf16(*name) : gpuPeakFlopsF32(*name);
    if (!peak) {
      if (isRank0()) DDP_LOG(Info) << "no MFU: the " << (bf16 ? "bf16" : "f32") << " peak of "
                                   << (name.isOk() ? *name : name.status().toString())
                                   << " is not in the table (worker/training/model_flops.cc)";
      return;
    }
    peakFlops = *peak;
  }
  flopsPerToken = gptFlopsPerToken(config.gpt, model->parameters());
}

bool Trainer::Impl::canEvaluate() const { return !config.languageModel() || data->valTokens.size() > 0; }

Result<model::BatchStats> Trainer::Impl::evaluateTokens() {
  const int t = config.gpt.contextLength;
  const std::vector<int64_t> starts =
      data::valWindowStarts(data->valTokens.size(), t, config.testLimit, backend.rank(), backend.size());
  // The activations were sized for the training micro-batch: evaluation batches are no larger.
  const size_t per = static_cast<size_t>(std::max(1, std::min(config.evalBatchSize, localBatch)));
  model::BatchStats local;
  data::TokenBatch tb;
  for (size_t i = 0; i < starts.size(); i += per) {
    const std::span<const int64_t> part(starts.data() + i, std::min(per, starts.size() - i));
    DDP_RETURN_IF_ERROR(data->valTokens.fill(part, t, config.gpt.vocabSize, &tb).withContext("validation tokens"));
    model::Batch b;
    b.size = tb.size;
    b.tokensPerSample = t;
    b.tokens = tb.inputs.data();
    b.classes = tb.targets.data();
    DDP_ASSIGN_OR_RETURN(model::BatchStats part_stats, model->evaluate(b));
    local += part_stats;
  }
  return local;
}

Result<model::BatchStats> Trainer::Impl::evaluate() {
  model::BatchStats local;
  if (config.languageModel()) {
    DDP_ASSIGN_OR_RETURN(local, evaluateTokens());
  } else {
    const int64_t n = data->test.size();
    const int64_t w = backend.size(), r = backend.rank();
    const int64_t begin = n * r / w, end = n * (r + 1) / w;
    std::vector<float> staged;  // a mapped dataset's samples (Note [Mapped features])
    for (int64_t start = begin; start < end; start += config.evalBatchSize) {
      model::Batch b;
      b.size = static_cast<int>(std::min<int64_t>(config.evalBatchSize, end - start));
      if (data->test.inMemory()) {
        b.features = data->test.sample(start);
      } else {
        staged.resize(static_cast<size_t>(b.size * data->test.sampleNumel()));
        data->test.copySamples(start, b.size, staged.data());
        b.features = staged.data();
      }
      if (data->test.floatTargets) {
        b.values = data->test.values.data() + start;  // a regression (spec.loss: mse)
      } else {
        b.classes = data->test.labels.data() + start;
      }
      DDP_ASSIGN_OR_RETURN(model::BatchStats s, model->evaluate(b));
      local += s;
    }
  }
  double sums[3] = {local.lossSum, static_cast<double>(local.correct), static_cast<double>(local.count)};
  auto work = backend.allreduce(comm::viewOf(sums, 3), comm::ReduceOp::kSum);
  DDP_RETURN_IF_ERROR(work->wait(opDeadline()).withContext("evaluation allreduce"));
  model::BatchStats global;
  global.lossSum = sums[0];
  global.correct = static_cast<int64_t>(std::llround(sums[1]));
  global.count = static_cast<int64_t>(std::llround(sums[2]));
  return global;
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::create(const TrainerConfig& config, comm::Backend& backend, TrainerIo io) {
  auto impl = std::make_unique<Impl>(config, backend, io);
  DDP_RETURN_IF_ERROR(impl->setup());
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Result<TrainResult> Trainer::run() { return impl_->run(); }
std::optional<PeerState> Trainer::peerState() { return impl_->peerState(); }
void Trainer::stopCommunication() {
  if (impl_->reducer) impl_->reducer->stopCommThread();
}
void Trainer::releaseCheckpointDirectory() {
  if (impl_->checkpoints) impl_->checkpoints->release();
}
model::TrainableModel& Trainer::model() { return *impl_->model; }
std::shared_ptr<const TrainingData> Trainer::data() const { return impl_->data; }

}  // namespace ddp::runtime
