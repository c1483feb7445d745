#pragma once
// Building blocks of a training run from a TrainerConfig: datasets, model, comm hook, reducer
// options, and the optimizer (plain or ZeRO-sharded) behind one small interface.
// Thread model: plain functions; OptimizerRunner is used by the training thread only.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/data/dataset.h"
#include "worker/data/standardize.h"
#include "worker/data/token_source.h"
#include "worker/ddp/comm_hook.h"
#include "worker/ddp/reducer.h"
#include "worker/model/sequential.h"
#include "worker/model/trainable_model.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/zero_redundancy_optimizer.h"
#include "worker/training/trainer_config.h"

namespace ddp::runtime {

struct TrainingData {
  data::Dataset train;
  data::Dataset test;
  // Language models (TrainerConfig::languageModel()): the token sequences; `valTokens` is empty
  // (size 0) when nothing is held out (valFraction 0 without a val path).
  data::TokenSource trainTokens;
  data::TokenSource valTokens;
  // A user's dataset: the standardization applied to both splits (empty: none; Note
  // [Standardization] in worker/data/standardize.h).
  data::Standardization standardization;
};

// Loads (or synthesises) both splits. A missing Fashion-MNIST names the package to install.
// Language models: token files are memory-mapped (never read whole: MappedTokens), text files
// read as bytes (bytesToTokens); without a val path the last valFraction of the training tokens
// is the validation split. Either split must hold one window of contextLength + 1 tokens.
// A user's dataset (idx, npy, csv): loadUserData (worker/data/user_data.h), the evaluation split
// as `test`.
Result<TrainingData> loadTrainingData(const TrainerConfig& config);
// A user's dataset decides the model's widths: the mlp's inputs (the flattened sample) and, for
// the mlp and the cnn, the classes. A cnn needs 1x28x28 (or 28x28) samples; float targets need a
// regression loss this trainer does not have yet. InvalidArgument naming what does not fit.
// Other datasets: nothing changes. A declared stack (sequential) without an input shape takes the
// data's sample shape (any dataset).
Status fitModelToData(TrainerConfig& config, const TrainingData& data);
// Whether training on config.device can start here: always on the CPU. CUDA needs a CUDA build
// (Unimplemented otherwise), a visible GPU (Unavailable naming the device otherwise), an
// existing ordinal (InvalidArgument), and a backend that carries CUDA buffers (InvalidArgument:
// the worker builds a ProcessGroup of Gloo and NCCL). Messages start with "spec.device".
Status checkTrainingDevice(const TrainerConfig& config, const comm::Backend& backend);
// The MLP, CNN or GPT on config.device, initialised from config.seed (identical on every rank).
Result<std::unique_ptr<model::TrainableModel>> buildModel(const TrainerConfig& config);
// Which parameters weight decay applies to (spec.optimizer.weightDecayOn): every one (kAll: an
// empty mask), or (kLinearWeights) the 2-D weight matrices of linear layers: not biases, norm
// gains, convolution kernels or embeddings (`embed.*`).
std::vector<bool> weightDecayMask(const TrainerConfig& config, const std::vector<Parameter*>& params);
// The comm hook selected by config.hook (never null).
Result<std::unique_ptr<CommHook>> buildCommHook(const TrainerConfig& config, comm::Backend& backend);
// Bucket sizes, timeout, fixed bucket layout, the reduce dtype of mixed precision, and the comm
// thread priority.
ReducerOptions makeReducerOptions(const TrainerConfig& config);

// Note [Mixed precision]
// spec.mixedPrecision fp16 / bf16 sets ReducerOptions::reduceDtype: the reducer allocates its
// buckets in that dtype and casts each f32 gradient into its bucket slot while packing, so the
// comm hook (allreduce, powerSGD, ...) receives a half-precision bucket; after the reduction the
// averaged values are cast back into the f32 Parameter::grad. Forward, backward, parameters,
// gradients and optimizer state all stay f32 (master weights): only the communicated values
// and their sum are rounded to half precision. On this CPU trainer that halves the bytes sent;
// the compute dtype is not changed. Combinations:
//   - commHook allreduce / powerSGD / batchedPowerSGD: the hook reduces the half bucket
//     (PowerSGD compresses f16/bf16 buckets).
//   - commHook fp16 / bf16 or a wrapper: valid but redundant (the bucket is already half; a
//     different half type rounds a second time).
//   - zero: zero1 (ZeRO-1 steps its shard on the reducer's f32 result): valid.
//   - zero: dfa: refused (DistributedFusedAdam reduce-scatters f32 gradients itself, no reducer).
//   - gradientAsBucketView: refused (an f32 gradient cannot live inside a half bucket).
// Resume stays bitwise: the casts are deterministic and the reducer holds no state.

// The "comm_hook" state rank `rank` of a `world`-rank run loads, from `saved[r]` = what saved
// rank r wrote (Note [Checkpoints at any world size] in checkpoint_coordinator.h): at the same
// world size its own; at another, for PowerSGD (plain or batched) under
// kRedistributeErrorFeedback, the state with every saved rank's error feedback redistributed
// (Note [Error feedback at another world size] in worker/ddp/powersgd_state.h, logged); else
// its own (rank 0's when it is new) and the hook's worldSizeChangePolicy applies. DataLoss when
// a saved state does not decode.
Result<std::string> commHookStateForWorld(const TrainerConfig& config, const std::vector<std::string>& saved,
                                          int rank, int world);

// The optimizer step as the trainer sees it: plain (every rank steps every parameter on the
// averaged gradients), ZeRO (each rank steps its shard, owners broadcast), or
// DistributedFusedAdam (which also reduces the gradients: no reducer then).
class OptimizerRunner {
 public:
  static Result<std::unique_ptr<OptimizerRunner>> create(const TrainerConfig& config,
                                                         std::vector<Parameter*> params,
                                                         comm::Backend& backend);
  void setLr(double lr);
  // One update, clipped by spec.optimizer.maxGradNorm when set: the plain optimizer folds the
  // coefficient of the (averaged, identical on every rank) gradient's global norm into its
  // step; ZeRO (Note [ZeRO clipping and decay groups] in worker/optim/zero_redundancy_optimizer.h)
  // and DistributedFusedAdam (from its reduced shards) clip inside their step. Each optimizer
  // applies the weightDecayMask of its parameters.
  Status step(Deadline deadline);
  // This rank's state: the whole optimizer (device state copied through the host), its ZeRO
  // shard, or (DFA, a collective) the full state streamed to rank 0 (empty elsewhere).
  Result<std::string> saveState(Deadline deadline);
  // saveState() split for asynchronous checkpoints: the state copied now (plain optimizers), the
  // encoding done by the returned function on the checkpoint writer's thread. ZeRO and
  // DistributedFusedAdam encode at once (the latter gathers: a collective).
  Result<std::function<std::string()>> snapshotState(Deadline deadline);
  // `states[r]` is what rank r of the saved world saved; states.size() is that world size, which
  // may differ from this run's (Note [Checkpoints at any world size] in checkpoint_coordinator.h):
  // plain loads this rank's (rank 0's when this rank is new: the state is replicated); ZeRO
  // reshards its shards (Note [Reshard plan] in worker/optim/reshard_plan.h); DFA reshards rank
  // 0's full state stream.
  Status loadState(const std::vector<std::string>& states, int rank);
  optim::ZeroRedundancyOptimizer* zero() { return zero_.get(); }
  optim::DistributedFusedAdam* fusedAdam() { return dfa_.get(); }

 private:
  std::unique_ptr<optim::Optimizer> plain_;
  std::unique_ptr<optim::ZeroRedundancyOptimizer> zero_;
  std::unique_ptr<optim::DistributedFusedAdam> dfa_;
  double maxGradNorm_ = 0;  // the plain optimizer's clipping (the sharded ones clip themselves)
};

}  // namespace ddp::runtime
