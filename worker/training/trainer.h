#pragma once
// Trainer: the step loop of one worker, from a TrainerConfig over a Backend.
//
// Note [Trainer step]
// The step loop (trainer_loop.cc) runs these phases per optimizer step, one function each:
//   1. injected faults (training_faults.h, tests only): a stall before the step;
//   2. the gradients: for each of the gradAccumulation micro-batches, forward/backward with the
//      reducer's ready callback, no_sync on all but the last (gradients accumulate locally,
//      scaled by 1/micro-batches), reducer.finalize();
//   3. command word (command_word.h): on every stopCheckEverySteps-th step (default: every
//      step), issue the allreduce(MAX) of this rank's command word [stop (SIGTERM, the
//      controller's stop, an injected stop), checkpoint now] (2 ints, asynchronous, overlapped
//      with the optimizer step; Note [Command word placement]); then lr = schedule(step) and
//      the optimizer step (plain, or ZeRO: shard step + owners' broadcasts); zero the gradients;
//   4. record: the position moves on, the progress observer and the checkpoint writer's reports;
//   5. log (step_log.h): a step line every logEverySteps steps and at the last step;
//   6. checkpoint (checkpoint_policy.h, Note [Checkpoint policy]): a periodic one when due;
//   7. on command-word steps, wait for the agreed word: if any rank was asked for a checkpoint,
//      every rank checkpoints this same step; if any rank was asked to stop, every rank
//      checkpoints this same step and returns `stopped` (they all saw the same allreduce result).
// When the pass over an epoch ends (epoch_boundary.h): evaluation on the test set after each
// epoch and at the run's end (each rank a contiguous slice, sums allreduced), then the next
// epoch's start and a checkpoint when configured. With Join (uneven inputs) the per-step command
// word is not issued (a joined rank could not match it); a stop request is agreed on at the
// epoch's end instead.
// Language models (TrainerConfig::languageModel()) run the same phases for spec.steps steps with
// no epochs: micro-batch m of step s reads the windows of sampler step s x micro-batches + m
// (Note [Token windows]), its dropout seed is mix(mix(seed, s0), that same index) with s0 the
// global index of the rank's first window (rank x local batch: the masks follow the windows, so
// two ranks that trade places after a recovery draw the same masks for the same windows), and after
// every evalEverySteps-th step and the last one the sequential validation windows are evaluated
// (each rank its share; loss sums and token counts allreduced, then divided).
//
// Resume: on start, the latest complete checkpoint (if any, and config.resume) restores model,
// optimizer (or ZeRO shard), comm-hook state, sampler position and step counters; the run then
// follows the uninterrupted one bitwise on CPU (same config, same world size).
// Thread model: create() and run() on one thread (the training thread); run() once.

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/model/trainable_model.h"
#include "worker/training/peer_state.h"
#include "worker/training/trainer_config.h"
#include "worker/training/training_setup.h"
#include "worker/control/worker_config.h"

namespace ddp::runtime {

class CheckpointChannel;  // checkpoint_channel.h
class TrainingFaults;     // training_faults.h

// What the trainer tells TrainerIo::onProgress: the run's position and this process's
// cumulative figures (Note [Trainer progress observer]).
struct TrainingProgress {
  int64_t step = 0;        // optimizer steps done (a resumed run counts the earlier ones)
  int64_t totalSteps = 0;
  int epoch = 0;           // 0-based epoch in progress (== epochs when finished)
  int epochs = 0;
  double loss = 0;         // this rank's mean loss of the last step
  double samplesPerSecond = 0;         // global, over the steps run in this process
  std::optional<double> testAccuracy;  // last evaluation (fraction; language models: next-token)
  std::optional<double> valLoss;       // last evaluation's mean loss (language models: per token)
  std::optional<double> tokensPerSecond;  // language models: global training tokens / s (as samplesPerSecond)
  std::optional<double> mfu;  // language models: model FLOPs utilisation (docs/TRAINING.md)
  // Cumulative over the steps run in this process.
  int64_t samples = 0;     // this rank's training samples
  int64_t steps = 0;
  double stepSeconds = 0;  // compute + exposed comm + optimizer + data (StepTimings)
  double commExposedSeconds = 0;  // StepTimings::exposedComm
  int64_t commBytes = 0;   // gradient bytes handed to the reduction's collectives (see the Note)
  int64_t compressionUncompressedBytes = 0;  // PowerSGD: buckets' bytes before compression
  int64_t compressionSentBytes = 0;          // ... and after (0/0 without compression)
  struct Checkpoint {
    int64_t step = 0;
    int64_t bytes = 0;     // this rank's shard (sections' sizes)
    std::string path;
  };
  std::optional<Checkpoint> checkpoint;  // the last one written or resumed from
  // A warning for the job's events (e.g. every checkpoint was unusable: the run starts over);
  // sent as the message of the Running heartbeats (docs/API.md).
  std::string warning;
};

// Note [Trainer progress observer]
// TrainerIo::onProgress runs on the training thread after every optimizer step, after each
// evaluation and after each checkpoint, with the figures above. It must be cheap and never
// block (the heartbeat reporter copies the struct under a mutex and returns). commBytes counts
// the reducer's bucket bytes (reduce dtype) per synced or shadow step, with compressed buckets
// at their compressed size: what the hooks hand to collectives, not wire bytes (a ring
// allreduce moves about 2(n-1)/n of that per rank). Without a reducer (DistributedFusedAdam)
// it is 0. Compression figures are those of a PowerSGD hook since this process started.

struct TrainerIo {
  std::FILE* progress = stdout;       // progress lines (nullptr: none)
  LogFormat format = LogFormat::kHuman;
  const std::atomic<bool>* stop = nullptr;  // SIGTERM flag (stop_signal.h); nullptr: never
  // Set when a checkpoint is requested (the controller's `checkpoint` command); the trainer
  // checkpoints at the next step whose flag allreduce carries it and clears it. nullptr: never.
  std::atomic<bool>* checkpointNow = nullptr;
  std::function<void(const TrainingProgress&)> onProgress;  // may be empty (Note [Trainer progress observer])
  // The data set, already loaded (a worker that rejoins after a fault keeps it: Note [Worker
  // generations]); nullptr: the trainer loads it. Must match the config's data section.
  std::shared_ptr<const TrainingData> data;
  // A user's trainer (worker/control/run_worker.h): loads the data set instead of
  // loadTrainingData (when `data` is nullptr), and builds the model instead of buildModel,
  // skipping fitModelToData (the user's factory sizes its model from the data it is given).
  // Empty: the built-in ones.
  std::function<Result<std::shared_ptr<const TrainingData>>(const TrainerConfig&)> loadData;
  std::function<Result<std::unique_ptr<model::TrainableModel>>(const TrainerConfig&, const TrainingData&)> buildModel;
  // Faults injected by tests (training_faults.h): an injected stop or stall in the step loop, a
  // failed or late shard write in the checkpoint writer. nullptr: none. Must outlive the trainer.
  const TrainingFaults* faults = nullptr;
  // Checkpoints through the controller's two-phase commit, written in the background (Note
  // [Asynchronous checkpoints] in checkpoint_writer.h); nullptr: CheckpointCoordinator::save's
  // collective commit, in the training thread. Must outlive the trainer.
  CheckpointChannel* checkpointChannel = nullptr;
  // Note [Healing from live peers] (peer_state.h): when set, the run first exchanges peer states
  // over the backend (every rank of the job must set it) and starts from the newest one any rank
  // holds instead of the checkpoint. `peerState`: this worker's from its previous generation
  // (nullptr: none). ddp-worker sets both; tests and benchmarks that build a Trainer leave them.
  bool exchangePeerState = false;
  const PeerState* peerState = nullptr;
};

// Seconds summed over the steps run in this process.
struct StepTimings {
  double compute = 0;      // forward + loss + backward (bucket hooks overlap with it)
  double exposedComm = 0;  // waiting in reducer.finalize() after backward
  double hook = 0;         // time inside comm hooks (comm thread; overlaps compute)
  double optimizer = 0;    // optimizer step (ZeRO: including the parameter broadcasts)
  double data = 0;         // batch assembly
  int64_t steps = 0;
};

struct TrainResult {
  int64_t steps = 0;              // optimizer steps done in total (before a resume included)
  int64_t startStep = 0;          // step this process started from (0, or the resumed step)
  int epochsCompleted = 0;
  bool stopped = false;           // stopped on request after checkpointing
  bool resumed = false;
  bool healed = false;             // started from a live peer's state (Note [Healing from live peers])
  double testAccuracy = 0;        // last evaluation (fraction)
  double testLoss = 0;
  std::vector<double> evalAccuracies;  // one per evaluation, in order
  std::optional<double> valLoss;       // language models: the last evaluation's mean loss per token
  std::vector<double> valLosses;       // language models: one per evaluation, in order
  std::vector<int64_t> evalSteps;      // language models: the step of each evaluation
  std::vector<double> stepLosses;      // this rank's mean loss of each step run here
  double trainSeconds = 0;        // wall time of the step loop (evaluation included)
  double samplesPerSecond = 0;    // global training samples / s over the steps run here
  double tokensPerSecond = 0;     // language models: global training tokens / s, the same way
  StepTimings timings;
};

class Trainer {
 public:
  // Loads data, builds the model, reducer (with its hook) and optimizer. A collective (the
  // reducer verifies shapes and broadcasts rank 0's parameters).
  static Result<std::unique_ptr<Trainer>> create(const TrainerConfig& config, comm::Backend& backend,
                                                 TrainerIo io = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  Result<TrainResult> run();
  // After run() returned (a fault): this rank's state at its last completed step, for the next
  // generation (Note [Healing from live peers]); nullopt when it has none that is complete on
  // this rank (ZeRO-1, DistributedFusedAdam) or could not be taken. Stops the reducer's comm
  // thread: the trainer can only be dropped afterwards.
  std::optional<PeerState> peerState();
  // After run() failed: stops the reducer's comm thread (it finishes the hook call it is in),
  // so that nothing issues collectives any more and the backend can go before the trainer
  // (Note [Worker generations] in worker_entry.cc). The trainer can only be dropped afterwards.
  void stopCommunication();
  // After run() failed: stops the checkpoint writer and releases the checkpoint directory's
  // lock (rank 0), so that the next generation's rank 0 can take it at once.
  void releaseCheckpointDirectory();
  model::TrainableModel& model();
  std::shared_ptr<const TrainingData> data() const;

  struct Impl;

 private:
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::runtime
