#include "worker/runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "common/binary_io.h"
#include "common/log.h"
#include "worker/data/batch_iterator.h"
#include "worker/data/distributed_sampler.h"
#include "worker/ddp/ddp_joinable.h"
#include "worker/ddp/powersgd_state.h"
#include "worker/ddp/powersgd_hook_base.h"
#include "worker/ddp/reducer.h"
#include "worker/join/join.h"
#include "worker/model/param_io.h"
#include "worker/optim/grad_norm.h"
#include "worker/runtime/checkpoint_coordinator.h"
#include "worker/runtime/progress_reporter.h"
#include "worker/runtime/training_faults.h"
#include "worker/runtime/training_setup.h"

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

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr uint32_t kTrainerStateMagic = 0x54525354;  // "TSRT"

double secondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// Position of the run, saved in every checkpoint ("trainer" section).
struct TrainerState {
  int64_t step = 0;   // optimizer steps done
  int32_t epoch = 0;  // 0-based epoch in progress (== epochs when finished)
  uint64_t seed = 0;
  int32_t worldSize = 1;
  int32_t batchSize = 0;   // spec.data.batchSize (per worker at the nominal world size)
  // Where the LR schedule is (Note [Elastic batch]): optimizer steps at the nominal global batch.
  // == step unless the world size changed with keepGlobalBatch false. Version 2.
  double scheduleStep = 0;

  std::string encode() const {
    BinaryWriter w;
    w.put(step);
    w.put(epoch);
    w.put(seed);
    w.put(worldSize);
    w.put(batchSize);
    w.put(scheduleStep);
    return writeFramed(kTrainerStateMagic, 2, w.data());
  }
  static Result<TrainerState> decode(std::string_view frame) {
    uint32_t version = 0;
    DDP_ASSIGN_OR_RETURN(std::string payload, readFramed(frame, kTrainerStateMagic, 2, &version, "trainer state"));
    BinaryReader r(payload, "trainer state");
    TrainerState s;
    DDP_RETURN_IF_ERROR(r.get(&s.step));
    DDP_RETURN_IF_ERROR(r.get(&s.epoch));
    DDP_RETURN_IF_ERROR(r.get(&s.seed));
    DDP_RETURN_IF_ERROR(r.get(&s.worldSize));
    DDP_RETURN_IF_ERROR(r.get(&s.batchSize));
    s.scheduleStep = static_cast<double>(s.step);
    if (version >= 2) DDP_RETURN_IF_ERROR(r.get(&s.scheduleStep));
    return s;
  }
};

}  // namespace

struct Trainer::Impl {
  TrainerConfig config;
  comm::Backend& backend;
  TrainerIo io;
  std::shared_ptr<const TrainingData> data;  // io.data, or loaded by setup()
  std::unique_ptr<model::Sequential> model;
  std::unique_ptr<Reducer> reducer;
  std::unique_ptr<DdpJoinable> ddpJoin;  // with config.join
  std::unique_ptr<OptimizerRunner> optimizer;
  std::optional<data::DistributedSampler> sampler;
  std::unique_ptr<CheckpointCoordinator> checkpoints;
  ProgressReporter reporter;
  TrainerState state;
  int64_t stepsPerEpoch = 0;
  int64_t totalSteps = 0;
  // Note [Elastic batch]: this generation's batch split.
  std::vector<int64_t> shares;  // per-rank samples per micro-batch when unequal; empty: localBatch each
  int localBatch = 0;           // this rank's samples per micro-batch
  double lrScale = 1.0;         // keepGlobalBatch false: world size / nominal world size
  double scheduleIncrement = 1.0;  // this generation's global batch / the nominal global batch
  // The sampler at the last completed step (Note [Healing from live peers]): a step that fails
  // part-way has read some of its batches.
  data::SamplerState boundarySampler;
  int32_t flagBuf[2] = {0, 0};  // [stop, checkpoint now]: the flag allreduce's buffer (alive until its Work completes)
  int64_t lastCheckpointStep = -1;  // the step of the last checkpoint written or resumed
  TrainingProgress progress;          // what io.onProgress sees (Note [Trainer progress observer])
  CompressionStats compressionBase;   // a PowerSGD hook's statistics when run() started

  Impl(const TrainerConfig& c, comm::Backend& b, TrainerIo i)
      : config(c), backend(b), io(i), reporter(i.format, i.progress) {}

  Deadline opDeadline() const { return Deadline::after(config.collectiveTimeout); }
  bool isRank0() const { return backend.rank() == 0; }
  bool printing() const { return io.progress != nullptr; }
  // spec.checkpoint.everySteps falls on the current step.
  bool periodicCheckpointDue() const {
    return config.checkpointEverySteps > 0 && state.step % config.checkpointEverySteps == 0;
  }

  Status setup();
  void planBatch();
  // Steps left from the sampler's position to the end of the run (stepsPerEpoch per later epoch).
  int64_t stepsToEnd() const;
  Status resume(TrainResult* result);
  // Note [Healing from live peers]: true when the state came from a peer.
  Result<bool> healFromPeers(TrainResult* result);
  // Loads a checkpoint (or a peer's state in its form) at this world size.
  Status applyLoaded(const LoadedCheckpoint& loaded, TrainResult* result);
  std::optional<PeerState> peerState();
  Result<std::string> checkpoint();
  Result<CheckpointSnapshot> snapshot();
  // Note [Asynchronous checkpoints]: what the writer finished, printed and published here.
  void reportWrittenCheckpoints();
  Status drainCheckpoints();
  Result<model::BatchStats> evaluate();
  Result<float> clipScale();
  Result<TrainResult> run();

  // Note [Trainer progress observer]: each fills its figures and calls io.onProgress.
  void publishProgress();
  void observeStep(const StepTimings& t, int64_t samplesHere, double loss);
  void observeEval(double accuracy);
  void observeCheckpoint(const CheckpointShard& shard, const std::string& path);
  CompressionStats compressionStats() const;
};

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

void Trainer::Impl::observeStep(const StepTimings& t, int64_t samplesHere, double loss) {
  if (!io.onProgress) return;
  progress.loss = loss;
  progress.samples = samplesHere;
  progress.steps = t.steps;
  progress.stepSeconds = t.compute + t.exposedComm + t.optimizer + t.data;
  progress.commExposedSeconds = t.exposedComm;
  progress.samplesPerSecond =
      progress.stepSeconds > 0 ? static_cast<double>(samplesHere) * backend.size() / progress.stepSeconds : 0;
  publishProgress();
}

void Trainer::Impl::observeEval(double accuracy) {
  progress.testAccuracy = accuracy;
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
  const int64_t micro = config.gradAccumulation;
  const int64_t batchesLeft = (sampler->remaining() + localBatch - 1) / localBatch;
  const int64_t laterEpochs = std::max<int64_t>(0, config.epochs - state.epoch - 1);
  int64_t steps = state.step + (batchesLeft + micro - 1) / micro + stepsPerEpoch * laterEpochs;
  if (config.maxSteps > 0) steps = std::min(steps, config.maxSteps);
  return steps;
}

// Gradients are identical on every rank after the reduction, so the global norm is local.
Result<float> Trainer::Impl::clipScale() {
  DDP_ASSIGN_OR_RETURN(double norm, optim::globalGradNorm(model->parameters()));
  return optim::clipCoefficient(norm, config.maxGradNorm);
}

Status Trainer::Impl::setup() {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_RETURN_IF_ERROR(checkTrainingDevice(config, backend));
  if (!config.checkpointDir.empty()) {
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
  }
  if (io.data) {
    data = io.data;
  } else {
    DDP_ASSIGN_OR_RETURN(TrainingData loaded, loadTrainingData(config));
    data = std::make_shared<const TrainingData>(std::move(loaded));
  }
  DDP_ASSIGN_OR_RETURN(model, buildModel(config));
  planBatch();
  model->reserve(std::max(localBatch, config.evalBatchSize));
  if (!model->device().isCpu()) {
    // The initial values were uploaded on the model's stream; the reducer's broadcast of rank 0's
    // parameters (NCCL) follows the default stream only (Note [CUDA gradient readiness]).
    DDP_RETURN_IF_ERROR(model->ops().synchronize().withContext("model on " + model->device().toString()));
  }
  if (config.data == DatasetKind::kSynthetic && data->train.sampleNumel() != model::shapeNumel(model->inputShape())) {
    return invalidArgument("data.synthetic: sample shape does not match the model's input " +
                           model::shapeString(model->inputShape()));
  }
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
  // Without a reducer (DistributedFusedAdam) nothing broadcasts rank 0's parameters: every rank
  // initialised them from the same seed, bitwise identical (worker/model/sequential.h).
  DDP_ASSIGN_OR_RETURN(optimizer, OptimizerRunner::create(config, model->parameters(), backend));

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
  DDP_RETURN_IF_ERROR(config.lr.validate().withContext("optimizer.schedule"));

  state.seed = config.seed;
  state.worldSize = backend.size();
  state.batchSize = config.batchSize;
  return Status::ok();
}

Result<bool> Trainer::Impl::healFromPeers(TrainResult* result) {
  // A committed checkpoint newer than every peer's state (the peers sat out generations that
  // went on without them) wins: rank 0 says which step that is.
  int64_t committed = -1;
  if (checkpoints && config.resume && isRank0()) {
    auto steps = checkpoints->store().ownCommittedSteps(checkpoints->job());
    if (steps.isOk() && !steps->empty()) committed = steps->back();
  }
  const PeerState* mine = io.peerState;
  int64_t newest[2] = {mine != nullptr ? mine->step : -1, committed};
  auto w = backend.allreduce(comm::viewOf(newest, 2), comm::ReduceOp::kMax);
  DDP_RETURN_IF_ERROR(w->wait(opDeadline()).withContext("peer state: newest step"));
  if (newest[0] < 0 || newest[1] > newest[0]) {
    if (newest[0] >= 0 && isRank0()) {
      DDP_LOG(Info) << "healing: checkpoint step " << newest[1] << " is newer than every peer's state (step "
                    << newest[0] << "): loading the checkpoint";
    }
    return false;
  }
  int source = -1;
  DDP_ASSIGN_OR_RETURN(std::optional<PeerState> peer, exchangePeerState(backend, mine, opDeadline(), &source));
  if (!peer) return false;
  LoadedCheckpoint loaded;
  loaded.path = "the state of rank " + std::to_string(source) + " (step " + std::to_string(peer->step) +
                ", generation " + std::to_string(peer->generation) + ")";
  loaded.shard.step = peer->step;
  loaded.shard.rank = source;
  loaded.shard.worldSize = peer->worldSize;
  loaded.savedWorldSize = peer->worldSize;
  loaded.shard.sections = std::move(peer->sections);
  auto section = [&](const char* name) {
    auto it = loaded.shard.sections.find(name);
    return it == loaded.shard.sections.end() ? std::string() : it->second;
  };
  loaded.optimizerShards = {section("optimizer")};  // replicated: one serves every rank
  if (auto hook = loaded.shard.sections.find("comm_hook"); hook != loaded.shard.sections.end()) {
    // PowerSGD without error feedback: iteration, RNG and Q memories, the same on every rank
    // (with error feedback there is no peer state: peerState()), loaded as this rank's own.
    auto ps = PowerSgdState::deserialize(hook->second);
    if (ps.isOk()) {
      ps->worldSize = backend.size();
      ps->rank = backend.rank();
      hook->second = ps->serialize();
    }
    loaded.commHookStates.assign(static_cast<size_t>(backend.size()), hook->second);
  }
  result->healed = true;
  DDP_RETURN_IF_ERROR(applyLoaded(loaded, result).withContext("healing from " + loaded.path));
  lastCheckpointStep = -1;  // nothing was read from the checkpoint directory
  return true;
}

std::optional<PeerState> Trainer::Impl::peerState() {
  // Sharded optimizer state and PowerSGD's error feedback lived partly on other ranks (the lost
  // one's only in the checkpoint); Join ranks are at different steps: the checkpoint is their
  // fallback.
  const bool powerSgd = config.hook == CommHookType::kPowerSgd || config.hook == CommHookType::kBatchedPowerSgd;
  if (config.sharding != ZeroMode::kNone || config.join || (powerSgd && config.powerSgd.useErrorFeedback)) {
    return std::nullopt;
  }
  if (reducer) reducer->stopCommThread();  // the hook's state is quiet from here on
  auto snap = snapshot();
  if (!snap.isOk()) {
    DDP_LOG(Warning) << "no state for the next generation: " << snap.status();
    return std::nullopt;
  }
  CheckpointShard& shard = snap->materialize();
  shard.sections["sampler"] = boundarySampler.serialize();
  PeerState p;
  p.step = state.step;
  p.worldSize = backend.size();
  p.sections = std::move(shard.sections);
  return p;
}

Status Trainer::Impl::resume(TrainResult* result) {
  if (io.exchangePeerState) {
    DDP_ASSIGN_OR_RETURN(bool healed, healFromPeers(result));
    if (healed) return Status::ok();
  }
  if (!checkpoints || !config.resume) return Status::ok();
  DDP_ASSIGN_OR_RETURN(LatestLoad latest, checkpoints->loadLatest(opDeadline()));
  // latest.startOverWarning (rank 0: checkpoints existed, none usable) is already logged at
  // Warning level; the heartbeat carries it to the controller's events.
  if (latest.startOverWarning) {
    progress.warning = *latest.startOverWarning;
    publishProgress();
  }
  if (!latest.checkpoint) return Status::ok();
  return applyLoaded(*latest.checkpoint, result);
}

Status Trainer::Impl::applyLoaded(const LoadedCheckpoint& loaded, TrainResult* result) {
  const CheckpointShard& shard = loaded.shard;
  DDP_ASSIGN_OR_RETURN(std::string_view ts, shard.section("trainer"));
  DDP_ASSIGN_OR_RETURN(TrainerState saved, TrainerState::decode(ts));
  if (saved.seed != state.seed || saved.batchSize != state.batchSize) {
    return failedPrecondition("checkpoint " + loaded.path + " was written by a run with seed " +
                              std::to_string(saved.seed) + " and batch size " + std::to_string(saved.batchSize) +
                              "; this job has seed " + std::to_string(state.seed) + " and batch size " +
                              std::to_string(state.batchSize) + " (use a fresh checkpoint directory)");
  }
  DDP_ASSIGN_OR_RETURN(std::string_view modelBytes, shard.section("model"));
  DDP_RETURN_IF_ERROR(model::loadParameters(modelBytes, model->parameters(), model->ops()).withContext(loaded.path));
  DDP_RETURN_IF_ERROR(optimizer->loadState(loaded.optimizerShards, backend.rank()).withContext(loaded.path));
  if (auto hs = shard.section("comm_hook"); hs.isOk() && reducer && reducer->commHook()->hasState()) {
    // Note [Checkpoints at any world size]: PowerSGD's error feedback is redistributed.
    DDP_ASSIGN_OR_RETURN(std::string hookState, commHookStateForWorld(config, loaded.commHookStates, backend.rank(),
                                                                      backend.size()));
    DDP_RETURN_IF_ERROR(reducer->commHook()->loadState(hookState).withContext(loaded.path));
  }
  DDP_ASSIGN_OR_RETURN(std::string_view ss, shard.section("sampler"));
  DDP_ASSIGN_OR_RETURN(data::SamplerState samplerState, data::SamplerState::deserialize(std::string(ss)));
  DDP_RETURN_IF_ERROR(sampler->restore(samplerState, saved.worldSize).withContext(loaded.path));
  state.step = saved.step;
  state.epoch = saved.epoch;
  state.scheduleStep = saved.scheduleStep;
  if (saved.worldSize != backend.size()) {
    // Note [Elastic batch]: the rest of the epoch is split over this world size.
    totalSteps = stepsToEnd();
    if (isRank0()) {
      DDP_LOG(Info) << "resuming step " << saved.step << " written by " << saved.worldSize << " workers at world size "
                    << backend.size() << ": " << sampler->remaining() << " samples of epoch " << saved.epoch + 1
                    << " left for rank 0, " << totalSteps << " steps in all";
    }
  }
  lastCheckpointStep = saved.step;
  result->resumed = true;
  result->startStep = saved.step;
  if (!result->healed) observeCheckpoint(shard, loaded.path);
  DDP_LOG(Info) << "resumed from " << loaded.path << " at step " << saved.step << ", epoch " << saved.epoch + 1;
  if (printing()) reporter.resume(saved.step, saved.epoch + 1, loaded.path);
  return Status::ok();
}

// Every section of this rank's checkpoint, copied into memory; the parameters' and a plain
// optimizer's encoding is deferred (Note [Asynchronous checkpoints]).
Result<CheckpointSnapshot> Trainer::Impl::snapshot() {
  CheckpointSnapshot snap;
  CheckpointShard& shard = snap.shard;
  shard.step = state.step;
  shard.rank = backend.rank();
  shard.worldSize = backend.size();
  shard.sections["trainer"] = state.encode();
  snap.deferred.emplace_back("model", [params = model::snapshotParameters(model->parameters(), model->ops())] {
    return model::encodeParameters(params);
  });
  DDP_ASSIGN_OR_RETURN(auto optimizerState, optimizer->snapshotState(opDeadline()));
  snap.deferred.emplace_back("optimizer", std::move(optimizerState));
  if (reducer && reducer->commHook()->hasState()) {
    DDP_ASSIGN_OR_RETURN(shard.sections["comm_hook"], reducer->commHook()->saveState());
  }
  shard.sections["sampler"] = sampler->state().serialize();
  return snap;
}

void Trainer::Impl::reportWrittenCheckpoints() {
  if (!checkpoints) return;
  for (const WrittenCheckpoint& w : checkpoints->takeFinished()) {
    if (!w.ok) {
      if (printing() && isRank0()) reporter.checkpointFailed(w.step, w.message);
      continue;
    }
    if (!isRank0()) continue;  // rank 0 speaks for the committed checkpoint
    if (printing()) reporter.checkpoint(w.step, w.path, w.snapshotSeconds + w.writeSeconds + w.commitSeconds,
                                        CheckpointTimes{w.snapshotSeconds, w.writeSeconds, w.commitSeconds});
    progress.checkpoint = TrainingProgress::Checkpoint{w.step, w.bytes, w.path};
    publishProgress();
  }
}

Status Trainer::Impl::drainCheckpoints() {
  if (!checkpoints) return Status::ok();
  Status st = checkpoints->drain(Deadline::after(config.collectiveTimeout * 2));
  reportWrittenCheckpoints();
  return st;
}

Result<std::string> Trainer::Impl::checkpoint() {
  const auto t0 = SteadyClock::now();
  DDP_ASSIGN_OR_RETURN(CheckpointSnapshot snap, snapshot());
  if (checkpoints->asynchronous()) {
    // Note [Asynchronous checkpoints]: the step stalls only for the snapshot (and for the
    // previous checkpoint, if it is still being written).
    const double snapSeconds = secondsSince(t0);
    DDP_RETURN_IF_ERROR(checkpoints->saveAsync(std::move(snap), snapSeconds, opDeadline()));
    lastCheckpointStep = state.step;
    return checkpoints->store().stepDir(state.step);
  }
  const CheckpointShard& shard = snap.materialize();
  DDP_ASSIGN_OR_RETURN(std::string path, checkpoints->save(shard, opDeadline()));
  lastCheckpointStep = state.step;
  if (printing()) reporter.checkpoint(state.step, path, secondsSince(t0));
  observeCheckpoint(shard, path);
  return path;
}

Result<model::BatchStats> Trainer::Impl::evaluate() {
  const int64_t n = data->test.size();
  const int64_t w = backend.size(), r = backend.rank();
  const int64_t begin = n * r / w, end = n * (r + 1) / w;
  model::BatchStats local;
  if (end > begin) {
    DDP_ASSIGN_OR_RETURN(local, model->evaluateAll(data->test.sample(begin), data->test.labels.data() + begin,
                                                   end - begin, config.evalBatchSize));
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

Result<TrainResult> Trainer::Impl::run() {
  TrainResult result;
  DDP_RETURN_IF_ERROR(resume(&result));
  boundarySampler = sampler->state();
  compressionBase = compressionStats();
  const auto runStart = SteadyClock::now();
  if (printing()) {
    reporter.start(config.job, backend.size(), model->describe(), model->numParameters(), totalSteps, config.epochs);
  }
  const int world = backend.size();
  const bool perStepStopFlag = !config.join;
  auto stopRequestedHere = [&]() {
    return (io.stop != nullptr && io.stop->load()) ||
           (io.faults != nullptr && io.faults->stopRequestedDuring(state.step + 1));
  };
  data::Batch batch;
  int64_t logSteps = 0, logSamples = 0;
  double logLoss = 0, logCorrect = 0, logCount = 0;
  auto logStart = SteadyClock::now();
  int64_t samplesHere = 0;
  GradReadyFn ready = reducer ? reducer->gradReadyFn() : optimizer->fusedAdam()->gradReadyFn();
  const bool onDevice = !model->device().isCpu();
  if (onDevice) {
    // Note [CUDA gradient readiness]. A failed synchronisation is sticky in the ops and
    // reported by forwardBackward's status check.
    ready = [inner = std::move(ready), &ops = model->ops()](size_t index) {
      (void)ops.synchronize();
      inner(index);
    };
  }
  bool finished = state.step >= totalSteps;

  while (!finished && state.epoch < config.epochs) {
    // A fresh epoch starts at position 0; a resumed one continues where the sampler was.
    if (sampler->epoch() != static_cast<uint64_t>(state.epoch)) sampler->setEpoch(static_cast<uint64_t>(state.epoch));
    data::BatchIterator it(data->train, *sampler, localBatch);
    std::unique_ptr<join::Join> joinScope;
    if (ddpJoin) {
      join::JoinOptions jo;
      jo.throwOnEarlyTermination = config.joinThrow;
      jo.hookOptions.divideByInitialWorldSize = config.joinDivideByInitialWorldSize;
      std::vector<join::Joinable*> joinables = {ddpJoin.get()};
      if (optimizer->zero() != nullptr) joinables.push_back(optimizer->zero());
      DDP_ASSIGN_OR_RETURN(joinScope, join::Join::create(joinables, jo));
    }
    while (state.step < totalSteps && sampler->remaining() > 0) {
      if (const std::optional<double> stall = io.faults != nullptr ? io.faults->stallBeforeStep(state.step + 1) : std::nullopt) {
        DDP_LOG(Warning) << "fault injection: stalling before step " << state.step + 1 << " for " << *stall << " s";
        const auto until = SteadyClock::now() + std::chrono::duration<double>(*stall);
        while (SteadyClock::now() < until && !(io.stop != nullptr && io.stop->load())) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      comm::WorkPtr stopWork;
      if (perStepStopFlag && (state.step + 1) % config.stopCheckEverySteps == 0) {
        flagBuf[0] = stopRequestedHere() ? 1 : 0;
        flagBuf[1] = io.checkpointNow != nullptr && io.checkpointNow->load() ? 1 : 0;
        stopWork = backend.allreduce(comm::viewOf(flagBuf, 2), comm::ReduceOp::kMax);
      }
      const int64_t remainingBatches = (sampler->remaining() + localBatch - 1) / localBatch;
      const int micro = static_cast<int>(std::min<int64_t>(config.gradAccumulation, remainingBatches));
      model::BatchStats stepStats;
      for (int m = 0; m < micro; ++m) {
        auto t0 = SteadyClock::now();
        if (!it.next(&batch)) return internalError("sampler ran out of data mid-step");
        result.timings.data += secondsSince(t0);
        float scale = 1.0f / static_cast<float>(micro);
        if (!shares.empty()) {  // Note [Elastic batch]: this rank's part of the block's mean
          scale *= static_cast<float>(world * batch.size) / static_cast<float>(sampler->blockTotal());
        }
        if (ddpJoin) {
          DDP_RETURN_IF_ERROR(ddpJoin->beginIteration(opDeadline()).withContext("step " + std::to_string(state.step)));
        } else if (reducer) {
          DDP_RETURN_IF_ERROR(reducer->setNoSync(m + 1 < micro));
        }
        t0 = SteadyClock::now();
        DDP_ASSIGN_OR_RETURN(model::BatchStats s,
                             model->forwardBackward(batch.images.data(), batch.labels.data(), batch.size, ready, scale));
        result.timings.compute += secondsSince(t0);
        t0 = SteadyClock::now();
        if (ddpJoin) {
          DDP_RETURN_IF_ERROR(ddpJoin->finalize(opDeadline()).withContext("step " + std::to_string(state.step)));
        } else if (reducer) {
          DDP_RETURN_IF_ERROR(reducer->finalize(opDeadline()).withContext("step " + std::to_string(state.step)));
        } else {
          // DistributedFusedAdam copied each gradient into its bucket when it was marked ready and
          // accumulates the reduced shards itself: the model's gradients restart from zero.
          model->zeroGrad();
        }
        result.timings.exposedComm += secondsSince(t0);
        stepStats += s;
      }
      auto t0 = SteadyClock::now();
      optimizer->setLr(config.lr.lrAt(static_cast<int64_t>(state.scheduleStep + 1e-9)) * lrScale);
      if (onDevice) DDP_RETURN_IF_ERROR(model->ops().synchronize().withContext("step " + std::to_string(state.step)));
      float gradScale = 1.f;
      if (config.maxGradNorm > 0) {
        DDP_ASSIGN_OR_RETURN(gradScale, clipScale());
      }
      DDP_RETURN_IF_ERROR(optimizer->step(opDeadline(), gradScale).withContext("optimizer step " + std::to_string(state.step)));
      model->zeroGrad();
      result.timings.optimizer += secondsSince(t0);
      ++state.step;
      state.scheduleStep += scheduleIncrement;
      boundarySampler = sampler->state();
      ++result.timings.steps;
      result.stepLosses.push_back(stepStats.meanLoss());
      samplesHere += stepStats.count;
      observeStep(result.timings, samplesHere, stepStats.meanLoss());
      reportWrittenCheckpoints();
      logSteps++;
      logSamples += stepStats.count;
      logLoss += stepStats.lossSum;
      logCorrect += static_cast<double>(stepStats.correct);
      logCount += static_cast<double>(stepStats.count);

      if (printing() && (state.step % config.logEverySteps == 0 || state.step == totalSteps)) {
        const double secs = secondsSince(logStart);
        StepReport r;
        r.step = state.step;
        r.totalSteps = totalSteps;
        r.epoch = state.epoch + 1;
        r.epochs = config.epochs;
        r.loss = logCount > 0 ? logLoss / logCount : 0;
        r.accuracy = logCount > 0 ? logCorrect / logCount : 0;
        r.lr = config.lr.lrAt(static_cast<int64_t>(state.scheduleStep - scheduleIncrement + 1e-9)) * lrScale;
        r.samplesPerSecond = secs > 0 ? static_cast<double>(logSamples) * world / secs : 0;
        r.etaSeconds = secs > 0 ? secs / static_cast<double>(logSteps) * static_cast<double>(totalSteps - state.step) : 0;
        reporter.step(r);
        logSteps = logSamples = 0;
        logLoss = logCorrect = logCount = 0;
        logStart = SteadyClock::now();
      }
      if (checkpoints && periodicCheckpointDue() && sampler->remaining() > 0) {
        DDP_RETURN_IF_ERROR(checkpoint().status());
      }
      if (stopWork) {
        DDP_RETURN_IF_ERROR(stopWork->wait(opDeadline()).withContext("stop-flag allreduce"));
        if (flagBuf[1] != 0 && flagBuf[0] == 0) {
          if (io.checkpointNow != nullptr) io.checkpointNow->store(false);
          if (checkpoints && lastCheckpointStep != state.step) DDP_RETURN_IF_ERROR(checkpoint().status());
        }
        if (flagBuf[0] != 0) {
          if (checkpoints && lastCheckpointStep != state.step) DDP_RETURN_IF_ERROR(checkpoint().status());
          DDP_RETURN_IF_ERROR(drainCheckpoints());
          result.stopped = true;
          if (printing()) reporter.stop(state.step, checkpoints ? "stop requested; checkpoint written" : "stop requested (no checkpoint directory)");
          DDP_LOG(Info) << "stop requested: stopped at step " << state.step;
          result.steps = state.step;
          result.epochsCompleted = state.epoch;
          result.trainSeconds = secondsSince(runStart);
          return result;
        }
      }
    }
    if (joinScope) {
      // This rank is out of data: shadow the others' steps until every rank is (Join).
      const int64_t before = state.step;
      DDP_RETURN_IF_ERROR(joinScope->finish(opDeadline()).withContext("join after step " + std::to_string(before)));
      if (joinScope->rounds() > 0) {
        DDP_LOG(Info) << "joined after step " << before << "; shadowed " << joinScope->rounds() << " steps of other ranks";
      }
      joinScope.reset();
    }
    const bool epochDone = sampler->remaining() == 0;
    finished = state.step >= totalSteps;
    if (epochDone || finished) {
      if (config.evalEachEpoch || finished) {
        DDP_ASSIGN_OR_RETURN(model::BatchStats ev, evaluate());
        result.testAccuracy = ev.accuracy();
        result.testLoss = ev.meanLoss();
        result.evalAccuracies.push_back(ev.accuracy());
        observeEval(ev.accuracy());
        if (printing()) {
          reporter.eval({state.step, state.epoch + 1, ev.meanLoss(), ev.accuracy(), secondsSince(runStart)});
        }
      }
    }
    if (epochDone) {
      ++state.epoch;
      result.epochsCompleted = state.epoch;
      if (state.epoch < config.epochs) sampler->setEpoch(static_cast<uint64_t>(state.epoch));
      boundarySampler = sampler->state();
      // A periodic checkpoint due at an epoch's last step is taken here, after the epoch ends (the
      // one in the step loop skips that step so that it records the next epoch's sampler).
      const bool periodicDue = periodicCheckpointDue() && lastCheckpointStep != state.step;
      if (checkpoints && (config.checkpointEachEpoch || periodicDue)) DDP_RETURN_IF_ERROR(checkpoint().status());
      if (!perStepStopFlag) {
        // Join: the stop request is agreed on at epoch boundaries only.
        int32_t flag = stopRequestedHere() ? 1 : 0;
        auto w = backend.allreduce(comm::viewOf(&flag, 1), comm::ReduceOp::kMax);
        DDP_RETURN_IF_ERROR(w->wait(opDeadline()));
        if (flag != 0 && state.epoch < config.epochs) {
          if (checkpoints && !config.checkpointEachEpoch) DDP_RETURN_IF_ERROR(checkpoint().status());
          result.stopped = true;
          if (printing()) reporter.stop(state.step, "stop requested");
          break;
        }
      }
    }
  }
  if (!result.stopped && result.evalAccuracies.empty()) {
    // Nothing evaluated in this process (e.g. resumed at the very end): evaluate once.
    DDP_ASSIGN_OR_RETURN(model::BatchStats ev, evaluate());
    result.testAccuracy = ev.accuracy();
    result.testLoss = ev.meanLoss();
    result.evalAccuracies.push_back(ev.accuracy());
    observeEval(ev.accuracy());
    if (printing()) reporter.eval({state.step, state.epoch, ev.meanLoss(), ev.accuracy(), secondsSince(runStart)});
  }
  if (checkpoints && config.checkpointAtEnd && !result.stopped && state.step != lastCheckpointStep) {
    DDP_RETURN_IF_ERROR(checkpoint().status());
  }
  DDP_RETURN_IF_ERROR(drainCheckpoints());
  result.steps = state.step;
  result.trainSeconds = secondsSince(runStart);
  const double stepSeconds = result.timings.compute + result.timings.exposedComm + result.timings.optimizer + result.timings.data;
  result.samplesPerSecond = stepSeconds > 0 ? static_cast<double>(samplesHere) * world / stepSeconds : 0;
  result.timings.hook = reducer ? reducer->stats().hookSeconds : 0.0;
  if (printing() && !result.stopped) reporter.done(state.step, state.epoch, result.testAccuracy, result.trainSeconds);
  if (printing()) {
    const StepTimings& t = result.timings;
    reporter.summary({t.steps, result.samplesPerSecond, t.compute, t.exposedComm, t.hook, t.optimizer, t.data});
  }
  return result;
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
model::Sequential& Trainer::model() { return *impl_->model; }
std::shared_ptr<const TrainingData> Trainer::data() const { return impl_->data; }

}  // namespace ddp::runtime
