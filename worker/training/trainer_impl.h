#pragma once
// Trainer::Impl: the trainer's state and its parts, private to the trainer's sources:
//   trainer.cc              setup (data, model, reducer, optimizer, sampler, step counts), the
//                           elastic batch plan, evaluation, the progress observer;
//   trainer_checkpoints.cc  snapshot, checkpoint, the writer's reports, resume, healing;
//   trainer_loop.cc         run(): the step loop and its phases (Note [Trainer step] in
//                           trainer.h), whose decisions are the pure pieces command_word.h,
//                           checkpoint_policy.h, epoch_boundary.h and step_log.h.
// Thread model: the training thread only (trainer.h).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/data/batch_iterator.h"
#include "worker/data/distributed_sampler.h"
#include "worker/data/token_batch.h"
#include "worker/data/token_window_sampler.h"
#include "worker/ddp/ddp_joinable.h"
#include "worker/ddp/powersgd_options.h"
#include "worker/ddp/reducer.h"
#include "worker/join/join.h"
#include "worker/checkpointing/checkpoint_coordinator.h"
#include "worker/training/checkpoint_policy.h"
#include "worker/training/command_word.h"
#include "worker/training/progress_reporter.h"
#include "worker/training/step_log.h"
#include "worker/training/trainer.h"
#include "worker/training/trainer_state.h"
#include "worker/training/training_setup.h"

namespace ddp::runtime {

using SteadyClock = std::chrono::steady_clock;

inline double secondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// One run()'s own state (trainer_loop.cc).
struct RunContext {
  TrainResult result;
  SteadyClock::time_point start;     // the run's start (evaluation lines' elapsed time)
  SteadyClock::time_point logStart;  // the last step line (or the start)
  StepLog log;                       // the steps since the last step line
  int64_t samplesHere = 0;           // this rank's training samples in this process
  GradReadyFn ready;                 // the reducer's (or DFA's), synchronising on a device
  bool onDevice = false;
  data::Batch batch;             // classifiers: the micro-batch's rows
  data::TokenBatch tokens;       // language models: the micro-batch's windows
  int64_t tokensHere = 0;        // language models: this rank's training tokens in this process
  int64_t lastEvalStep = -1;     // language models: the step of the last evaluation
};

// How a pass of the step loop over an epoch ended.
enum class LoopExit {
  kContinue,          // the epoch (or the run) ended: go on
  kStopped,           // a stop agreed on in the command word: the result is final
  kStoppedAtEpochEnd  // Join: a stop agreed at the epoch's end; the run's end follows
};

struct Trainer::Impl {
  TrainerConfig config;
  comm::Backend& backend;
  TrainerIo io;
  std::shared_ptr<const TrainingData> data;  // io.data, or loaded by setup()
  std::unique_ptr<model::TrainableModel> model;
  std::unique_ptr<Reducer> reducer;
  std::unique_ptr<DdpJoinable> ddpJoin;  // with config.join
  std::unique_ptr<OptimizerRunner> optimizer;
  std::optional<data::DistributedSampler> sampler;  // classifiers (epochs of a Dataset)
  std::optional<data::TokenWindowSampler> windows;  // language models (Note [Token windows])
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
  CommandWordAgreement command;     // its buffers live as long as the trainer (command_word.h)
  int64_t lastCheckpointStep = -1;  // the step of the last checkpoint written or resumed
  TrainingProgress progress;          // what io.onProgress sees (Note [Trainer progress observer])
  CompressionStats compressionBase;   // a PowerSGD hook's statistics when run() started
  // Language models with a progress observer: this rank's peak (a CPU's measured GEMM speed, a
  // GPU's f32 datasheet figure) and the model's training FLOPs per token, for progress.mfu
  // (model_flops.h); 0: no MFU.
  double peakFlops = 0;
  double flopsPerToken = 0;

  Impl(const TrainerConfig& c, comm::Backend& b, TrainerIo i)
      : config(c), backend(b), io(i), reporter(i.format, i.progress) {}

  Deadline opDeadline() const { return Deadline::after(config.collectiveTimeout); }
  bool isRank0() const { return backend.rank() == 0; }
  bool printing() const { return io.progress != nullptr; }
  // Note [Checkpoint policy], from the config as setup() left it.
  CheckpointPolicy checkpointPolicy() const {
    return {config.checkpointEverySteps, config.checkpointEachEpoch, config.checkpointAtEnd};
  }

  // --- setup (trainer.cc) ---
  Status setup();
  Status setupCheckpoints();
  Status setupModel();  // the built-in model fitted to the data, or the user's factory (TrainerIo)
  Status setupReduction();
  // The sampler, the step counts and the LR schedule's length.
  Status setupSchedule();
  // Language models: the window sampler and the step counts (spec.steps, no epochs).
  Status setupWindows();
  // Language models with a progress observer: peakFlops and flopsPerToken for the MFU.
  void setupPeakFlops();
  void planBatch();
  // Steps left from the sampler's position to the end of the run (stepsPerEpoch per later epoch).
  int64_t stepsToEnd() const;
  Result<model::BatchStats> evaluate();
  // Language models: the sequential validation windows, this rank's share (Note [Token windows]).
  Result<model::BatchStats> evaluateTokens();
  // Whether there is anything to evaluate on (a language model may hold nothing out).
  bool canEvaluate() const;
  // This rank's samples of the epoch left (language models: no epochs, always some).
  int64_t samplesLeftHere() const { return sampler ? sampler->remaining() : 1; }
  data::SamplerState samplerState() const { return sampler ? sampler->state() : data::SamplerState{}; }

  // --- checkpoints, resume, healing (trainer_checkpoints.cc) ---
  Status resume(TrainResult* result);
  // Note [Healing from live peers]: true when the state came from a peer.
  Result<bool> healFromPeers(TrainResult* result);
  // Loads a checkpoint (or a peer's state in its form) at this world size.
  Status applyLoaded(const LoadedCheckpoint& loaded, TrainResult* result);
  // The checkpoint's "standardize" section adopted (Note [Standardization]).
  Status restoreStandardization(const CheckpointShard& shard, const std::string& path);
  std::optional<PeerState> peerState();
  Result<std::string> checkpoint();
  Result<CheckpointSnapshot> snapshot();
  // Note [Asynchronous checkpoints]: what the writer finished, printed and published here.
  void reportWrittenCheckpoints();
  Status drainCheckpoints();

  // --- the step loop (trainer_loop.cc), in the order of Note [Trainer step] ---
  Result<TrainResult> run();
  Status beginRun(RunContext& run);
  Result<LoopExit> runEpoch(RunContext& run);
  // Language models: spec.steps steps, an evaluation every evalEverySteps and at the end.
  Result<LoopExit> runLanguageModel(RunContext& run);
  Result<std::unique_ptr<join::Join>> openJoin();
  Status closeJoin(std::unique_ptr<join::Join> scope);
  // One pass of the loop: every phase of one step. True when the run stopped.
  // `it`: the epoch's batches (classifiers); nullptr: token windows (language models).
  Result<bool> stepPhases(RunContext& run, data::BatchIterator* it);
  void stallIfInjected();
  bool stopRequestedHere() const;
  CommandWord localCommandWord() const;
  // The micro-batches and the optimizer step; issues the command word when `agree`.
  Result<model::BatchStats> runStep(RunContext& run, data::BatchIterator* it, bool agree);
  Result<model::BatchStats> microBatch(RunContext& run, data::BatchIterator* it, int m, int micro);
  // Micro-batch m of `micro` of the step about to run, as the model reads it.
  Result<model::Batch> nextBatch(RunContext& run, data::BatchIterator* it, int m, int micro);
  Status optimizerStep(RunContext& run);
  void recordStep(RunContext& run, const model::BatchStats& stats);
  void logStep(RunContext& run, const model::BatchStats& stats);
  // Waits for the step's command word and does what it asks. True when the run stopped.
  Result<bool> actOnCommandWord(RunContext& run);
  Result<LoopExit> endEpoch(RunContext& run);
  Result<LoopExit> joinStopAtEpochEnd();
  // Evaluates, records it in the result and reports it (`epochLabel`: the epoch the line names).
  Status evaluatePhase(RunContext& run, int epochLabel);
  Result<TrainResult> endRun(RunContext& run);

  // Note [Trainer progress observer]: each fills its figures and calls io.onProgress.
  void publishProgress();
  void observeStep(const StepTimings& t, int64_t samplesHere, int64_t tokensHere, double loss);
  void observeEval(double accuracy, std::optional<double> valLoss);
  void observeCheckpoint(const CheckpointShard& shard, const std::string& path);
  CompressionStats compressionStats() const;
};

}  // namespace ddp::runtime
