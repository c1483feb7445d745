#pragma once
// TrainerConfig: everything the Trainer needs. Built from a JobSpec (job_spec_adapter.h) or
// directly by tests and benchmarks. The choices a job makes (model, dataset, comm hook and
// wrapper, mixed precision, ZeRO mode) keep the JobSpec's own enums (common/jobspec/job_spec.h): one
// vocabulary for one choice. What is the trainer's own is here in its own terms: the resolved
// device, model and dataset shapes, paths, durations, the comm thread priority.
// Thread model: plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/dtype.h"
#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "common/thread_priority.h"
#include "worker/data/distributed_sampler.h"
#include "worker/data/synthetic_dataset.h"
#include "worker/data/user_data.h"
#include "worker/ddp/powersgd_options.h"
#include "worker/model/cnn.h"
#include "worker/model/gpt_block.h"
#include "worker/model/mlp.h"
#include "worker/model/sequential_builder.h"
#include "worker/optim/optimizer_config.h"
#include "worker/training/lr_schedule.h"

namespace ddp::runtime {

struct TrainerConfig {
  std::string job = "job";
  uint64_t seed = 0;  // model init and shuffling

  // Where the model, its gradients and the optimizer state live (spec.device). CUDA: the model
  // is built on this device, batches are uploaded to it, and the backend must carry CUDA
  // buffers (a ProcessGroup of Gloo and NCCL: worker_entry.h). validate() refuses what the
  // CUDA path cannot do (Note [CUDA training] in trainer.cc).
  Device device = Device::cpu();

  // Model.
  ModelType model = ModelType::kMlp;
  model::MlpConfig mlp;
  model::CnnConfig cnn;
  model::GptConfig gpt;  // kGpt (vocabSize resolved: 256 for text)
  // kSequential: the declared layers and the per-sample input shape the data gives (Note
  // [Declared layer stacks] in common/jobspec/layer_spec.h); empty: the loaded data's sample
  // shape (the trainer's setup checks the stack against it before the first step).
  std::vector<LayerSpec> stack;
  model::Shape stackInput;
  // The loss of a feature model: crossEntropy on classes, mse on float targets.
  LossType loss = LossType::kCrossEntropy;
  int cpuThreads = 1;  // compute threads per worker

  // Data.
  DatasetKind data = DatasetKind::kFashionMnist;
  std::string dataDir;          // Fashion-MNIST directory (empty: the package's)
  int64_t trainLimit = 0;       // first N training samples (0: all)
  int64_t testLimit = 0;        // first N test samples (0: all)
  data::SyntheticConfig synthetic;
  int64_t syntheticTestSamples = 1024;
  bool normalize = true;        // Fashion-MNIST: (x - mean) / std
  bool shuffle = true;
  data::SamplerMode samplerMode = data::SamplerMode::kPad;
  std::vector<int64_t> unevenCounts;  // kUneven: per-rank training samples (optional)
  // Language-model data (kTokens, kText: docs/DATA.md): the training and validation files (a
  // path or a glob; tokens: rawDType "" for llm.c files, else uint16 | uint32), and without a
  // validation path the last valFraction of the training tokens held out. Training reads random
  // windows (Note [Token windows]), evaluation the sequential validation windows.
  struct TokenFiles {
    std::string path;
    std::string rawDType;
    bool operator==(const TokenFiles&) const = default;
  };
  TokenFiles trainTokens, valTokens;
  double valFraction = 0.1;
  // A user's dataset (kIdx, kNpy, kCsv: docs/DATA.md): its files, class count, held-out
  // fraction and standardization (trainLimit and testLimit apply too). The model's input and
  // output widths follow the data (fitModelToData in training_setup.h).
  data::UserDataConfig userData;

  // Schedule.
  int batchSize = 64;            // per worker, per micro-batch, at nominalWorldSize workers
  // Elastic training (Note [Elastic batch] in trainer.cc): the world size the batch size is
  // given for (spec.workers.count; 0: whatever the backend's size is), and what a generation
  // at another world size keeps: the global batch (split over its workers) or the per-worker
  // batch (with the learning rate scaled linearly).
  int nominalWorldSize = 0;
  bool keepGlobalBatch = true;
  // The global batch (spec.data.globalBatchSize; 0: batchSize x nominalWorldSize). Its world
  // size, globalBatch / batchSize, is the reference for both policies.
  int64_t globalBatch = 0;
  int epochs = 1;
  int64_t maxSteps = 0;          // stop after this many optimizer steps (0: run every epoch);
                                 // with epochs == 0, the epochs needed for maxSteps are run
  int gradAccumulation = 1;      // micro-batches per optimizer step (no_sync on all but the last)
  optim::OptimizerConfig optimizer;
  double maxGradNorm = 0;        // clip by global gradient norm when > 0
  LrSchedule lr;                 // baseLr is the optimizer's lr; totalSteps filled in by the trainer
  bool evalEachEpoch = true;
  int evalBatchSize = 1000;
  int64_t evalEverySteps = 0;    // language models: evaluate every this many steps (and at the end)
  WeightDecayOn weightDecayOn = WeightDecayOn::kAll;  // kLinearWeights: 2-D linear weights only

  // Communication.
  CommHookType hook = CommHookType::kAllreduce;  // kNoop is refused (debugging only)
  HookWrapper hookWrapper = HookWrapper::kNone;
  PowerSgdOptions powerSgd;      // kPowerSgd / kBatchedPowerSgd
  double bucketCapMb = 25.0;
  double firstBucketMb = 1.0;
  bool gradientAsBucketView = false;
  // Reduce gradients in fp16 / bf16 (the reducer's reduceDtype); parameters, gradients and
  // optimizer state stay f32. Not with ZeroMode::kDfa nor gradientAsBucketView.
  MixedPrecision mixedPrecision = MixedPrecision::kNone;
  // Who holds the optimizer state: every rank (kNone), ZeRO-1 shards (kZero1), or
  // DistributedFusedAdam, which also reduces the gradients (kDfa: no reducer).
  ZeroMode sharding = ZeroMode::kNone;
  bool join = false;             // uneven inputs: Join shadows finished ranks
  bool joinThrow = false;        // throw mode: a rank running out stops every rank with an error
  bool joinDivideByInitialWorldSize = true;
  Duration collectiveTimeout = std::chrono::minutes(5);
  // Scheduling of the reducer's comm thread (Note [Comm thread priority]); the worker gives
  // its backend the same.
  CommThreadPriority commThreadPriority = CommThreadPriority::kAuto;

  // Checkpoints.
  std::string checkpointDir;     // empty: no checkpoints
  // spec.init.from: a safetensors file the parameters start from (a checkpoint to resume from
  // wins); empty: the seed's initialization. The optimizer starts fresh either way.
  std::string initFrom;
  int64_t checkpointEverySteps = 0;  // periodic; 0: none (a dir still gives end-of-run and stop checkpoints)
  bool checkpointEachEpoch = false;
  bool checkpointAtEnd = true;
  int keepCheckpoints = 3;
  bool resume = true;            // start from the latest complete checkpoint when there is one

  // Stop requests (SIGTERM) are agreed on every this many steps (Note [Trainer step]); 1: the
  // next step boundary. Larger values save the 1-int collective on the other steps.
  int stopCheckEverySteps = 1;

  // Progress.
  int logEverySteps = 50;

  // A user's dataset: idx, npy or csv files.
  bool fromUserFiles() const {
    return data == DatasetKind::kIdx || data == DatasetKind::kNpy || data == DatasetKind::kCsv;
  }

  // A language model on token windows (model gpt, data tokens or text).
  bool languageModel() const {
    return model == ModelType::kGpt || data == DatasetKind::kTokens || data == DatasetKind::kText;
  }

  // InvalidArgument naming the field (as in the job YAML where one maps to it).
  Status validate() const;
  // The CUDA part of validate(): ok on the CPU; with a CUDA device, InvalidArgument naming the
  // first field whose value the CUDA path does not support, and why.
  Status validateDevice() const;
  // The language-model part of validate() (languageModel() only).
  Status validateLanguageModel() const;
};

// Note [Trajectory hash]
// trajectoryHash(): FNV-1a (common/fnv1a.h) over the fields that change what training computes,
// recorded in every checkpoint manifest with the job's name (Note [Checkpoint job identity] in
// common/checkpoint/checkpoint_format.h) so a job resumes only its own checkpoints. In: the
// model (type and the active model's shape), the data set and its options (kind, synthetic
// config, train limit, normalize, shuffle, sampler mode), seed, batch size, gradient
// accumulation, optimizer and its hyperparameters, the LR schedule (kind, warmup, step size,
// gamma, min lr; not baseLr and totalSteps, which the trainer fills in), max grad norm, comm
// hook, wrapper and PowerSGD options (not its logging frequency), mixed precision, ZeRO/DFA,
// Join and its divisor, epochs and maxSteps; for a user's dataset (idx, npy, csv only, so earlier
// hashes stay) its target column, whether a val split is given, classes, valFraction and
// standardize. Out: the world size (a resumed job may change it;
// its checkpoints are then skipped, not refused) and the per-rank uneven counts, which follow
// the world size; the device (checkpoints move between CPU and CUDA); the data directory (a
// location, not a data set; so are a user's file paths); evaluation settings (testLimit, syntheticTestSamples,
// evalEachEpoch, evalBatchSize: they do not touch the parameters); bucket sizes, bucket views,
// cpuThreads and the comm thread priority (performance knobs); checkpoint, logging, stop-check
// and timeout settings. Stable across builds and machines for the same values, and pinned for
// the shipped examples and test jobs by tests/unit/runtime/trajectory_hash_pin_test.cc: a new
// field is fed only when it differs from its default, so every existing job keeps its hash and
// its checkpoints keep resuming (feeding it always would change every hash). Compute it from
// the config as given, before the trainer fills anything in.
uint64_t trajectoryHash(const TrainerConfig& config);

}  // namespace ddp::runtime
