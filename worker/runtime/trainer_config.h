#pragma once
// TrainerConfig: everything the Trainer needs, in the runtime's own terms. Built from a JobSpec
// (job_spec_adapter.h) or directly by tests and benchmarks.
// Thread model: plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/dtype.h"
#include "common/status.h"
#include "worker/data/distributed_sampler.h"
#include "worker/data/synthetic_dataset.h"
#include "worker/ddp/powersgd_options.h"
#include "worker/model/cnn.h"
#include "worker/model/mlp.h"
#include "worker/optim/optimizer_config.h"
#include "worker/runtime/lr_schedule.h"

namespace ddp::runtime {

enum class ModelKind { kMlp, kCnn };
enum class DataSource { kFashionMnist, kSynthetic };
// How gradients are reduced (the reducer's comm hook).
enum class HookKind { kAllreduce, kFp16, kBf16, kPowerSgd, kBatchedPowerSgd };
// Half-precision wrapper around the hook (fp16_wrapper / bf16_wrapper).
enum class HookWrapperKind { kNone, kFp16, kBf16 };
// Who holds the optimizer state.
enum class OptimizerSharding { kNone, kZero, kFusedAdam };
// Mixed precision (Note [Mixed precision] in training_setup.h): the dtype gradients are reduced in.
enum class MixedPrecisionKind { kNone, kFp16, kBf16 };

const char* hookKindName(HookKind k);
bool parseHookKind(const std::string& text, HookKind* out);
const char* shardingName(OptimizerSharding s);
const char* mixedPrecisionKindName(MixedPrecisionKind k);
bool parseSharding(const std::string& text, OptimizerSharding* out);

struct TrainerConfig {
  std::string job = "job";
  uint64_t seed = 0;  // model init and shuffling

  // Where the model, its gradients and the optimizer state live (spec.device). CUDA: the model
  // is built on this device, batches are uploaded to it, and the backend must carry CUDA
  // buffers (a ProcessGroup of Gloo and NCCL: worker_entry.h). validate() refuses what the
  // CUDA path cannot do (Note [CUDA training] in trainer.cc).
  Device device = Device::cpu();

  // Model.
  ModelKind model = ModelKind::kMlp;
  model::MlpConfig mlp;
  model::CnnConfig cnn;
  int cpuThreads = 1;  // compute threads per worker

  // Data.
  DataSource data = DataSource::kFashionMnist;
  std::string dataDir;          // Fashion-MNIST directory (empty: the package's)
  int64_t trainLimit = 0;       // first N training samples (0: all)
  int64_t testLimit = 0;        // first N test samples (0: all)
  data::SyntheticConfig synthetic;
  int64_t syntheticTestSamples = 1024;
  bool normalize = true;        // Fashion-MNIST: (x - mean) / std
  bool shuffle = true;
  data::SamplerMode samplerMode = data::SamplerMode::kPad;
  std::vector<int64_t> unevenCounts;  // kUneven: per-rank training samples (optional)

  // Schedule.
  int batchSize = 64;            // per worker, per micro-batch
  int epochs = 1;
  int64_t maxSteps = 0;          // stop after this many optimizer steps (0: run every epoch);
                                 // with epochs == 0, the epochs needed for maxSteps are run
  int gradAccumulation = 1;      // micro-batches per optimizer step (no_sync on all but the last)
  optim::OptimizerConfig optimizer;
  double maxGradNorm = 0;        // clip by global gradient norm when > 0
  LrSchedule lr;                 // baseLr is the optimizer's lr; totalSteps filled in by the trainer
  bool evalEachEpoch = true;
  int evalBatchSize = 1000;

  // Communication.
  HookKind hook = HookKind::kAllreduce;
  HookWrapperKind hookWrapper = HookWrapperKind::kNone;
  PowerSgdOptions powerSgd;      // kPowerSgd / kBatchedPowerSgd
  double bucketCapMb = 25.0;
  double firstBucketMb = 1.0;
  bool gradientAsBucketView = false;
  // Reduce gradients in fp16 / bf16 (the reducer's reduceDtype); parameters, gradients and
  // optimizer state stay f32. Not with kFusedAdam nor gradientAsBucketView.
  MixedPrecisionKind mixedPrecision = MixedPrecisionKind::kNone;
  OptimizerSharding sharding = OptimizerSharding::kNone;
  bool join = false;             // uneven inputs: Join shadows finished ranks
  bool joinThrow = false;        // throw mode: a rank running out stops every rank with an error
  bool joinDivideByInitialWorldSize = true;
  Duration collectiveTimeout = std::chrono::minutes(5);

  // Checkpoints.
  std::string checkpointDir;     // empty: no checkpoints
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

  // InvalidArgument naming the field (as in the job YAML where one maps to it).
  Status validate() const;
  // The CUDA part of validate(): ok on the CPU; with a CUDA device, InvalidArgument naming the
  // first field whose value the CUDA path does not support, and why.
  Status validateDevice() const;
  std::string modelName() const;  // "mlp" / "cnn"
};

}  // namespace ddp::runtime
