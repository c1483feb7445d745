#pragma once
// ZeroRedundancyOptimizer (ZeRO stage 1): optimizer state sharded over the ranks.
//
// Each parameter is owned by one rank (zero_partition.h: sorted greedy, never split). step()
// runs the wrapped optimizer (SGD, Adam or AdamW; PyTorch semantics) on the owned parameters
// only, then every owner broadcasts its updated parameters packed in one flat buffer: one
// collective per non-empty owner shard, not one per parameter. Gradients must already be
// reduced (e.g. by DDP); after step() every rank holds identical parameters.
//
// Memory: optimizer state on a rank is about total / world (at most one parameter more than an
// even split); the packed broadcast buffers hold one copy of the parameters (communication
// buffers, not optimizer state).
//
// Note [Resharding]
// The saved state is an OptimizerState (optimizer_state.h) keyed by the parameter's position in
// the model, independent of world size and partition. consolidateStateDict() gathers every
// shard onto one rank (a collective); localStateDict() gives this rank's shard (merge shards
// with OptimizerState::merge). loadStateDict() takes a full state and keeps the records this
// rank owns under the CURRENT partition, so a checkpoint written at world 4 continues the same
// trajectory at world 2 or 3 (PyTorch cannot do this: pytorch#65650). A plain Optimizer's
// stateDict() loads too, and a consolidated state loads into a plain Optimizer.
//
// Note [ZeRO clipping and decay groups]
// Clipping (setMaxGradNorm): step() computes the global norm of every parameter's gradient and
// folds clipCoefficient(norm, maxNorm) into the shard update's gradScale, like the non-sharded
// trainer. The norm is computed locally, over the full gradient, not as a sum of shard norms
// allreduced: step()'s precondition is that every rank holds the same averaged gradients (DDP's
// allreduce gives every rank the same bits), so every rank computes the same norm from the same
// values in the same order, hence the same coefficient, without a collective per step (Note
// [Per-op latency] in docs/ARCHITECTURE.md), and bitwise the coefficient of the non-sharded
// optimizer. The cost is one read of the whole gradient per rank, which the non-sharded trainer
// pays as well. A joined rank's step (the join hook) clips by the norm of the gradients DDP's
// shadow iteration reduced for it, the same as the active ranks'.
// Decay groups (setWeightDecayMask): the mask is per model position; the local optimizer gets
// the entries of the parameters it owns (Optimizer::setWeightDecayMask), so a parameter decays
// or not whichever rank owns it. Neither changes the saved state: resume and resharding are as
// before (Note [Resharding]).
//
// Join: a Joinable whose main hook is step() (a joined rank steps its own shard with the
// gradients DDP's join hook reduced for it and takes part in the broadcasts).
// Thread model: not thread-safe; the training thread calls everything. Collectives are waited
// on before each call returns.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/core/parameter.h"
#include "worker/join/joinable.h"
#include "worker/optim/optimizer.h"

namespace ddp::optim {

class ZeroRedundancyOptimizer final : public join::Joinable {
 public:
  // Validates like makeOptimizer(). Every rank must pass the same parameter list (shapes).
  static Result<std::unique_ptr<ZeroRedundancyOptimizer>> create(std::vector<Parameter*> params,
                                                                 comm::Backend& pg,
                                                                 const OptimizerConfig& config);

  // Collective: local step on the owned shard, then the owners' broadcasts.
  Status step(Deadline deadline);
  Status step() { return step(Deadline::after(pg_.defaultTimeout())); }

  // Weight decay applies to parameter i only where mask[i] (empty, the default: to every one).
  // InvalidArgument unless empty or one entry per parameter. Not a collective.
  Status setWeightDecayMask(const std::vector<bool>& mask);
  // Clip by the global gradient norm when maxNorm > 0 (Note [ZeRO clipping and decay groups]).
  void setMaxGradNorm(double maxNorm) { maxGradNorm_ = maxNorm; }
  // The global norm of the gradient the last step() computed (0 without clipping).
  double lastGradNorm() const { return lastGradNorm_; }

  float lr() const { return local_->lr(); }
  void setLr(float lr) { local_->setLr(lr); }
  const OptimizerConfig& config() const { return local_->config(); }
  const std::vector<Parameter*>& parameters() const { return params_; }
  // owner()[i] = rank owning parameter i.
  const std::vector<int>& owners() const { return owners_; }
  // Optimizer-state bytes held by this rank.
  size_t stateBytes() const { return local_->stateBytes(); }

  // This rank's shard: an OptimizerState frame whose records carry model positions.
  std::string localStateDict() const;
  // Collective: every rank's shard is sent to rank `to`, which returns the full state; the
  // other ranks return an empty string.
  Result<std::string> consolidateStateDict(int to, Deadline deadline);
  // Loads a full state (any world size; Note [Resharding]). Not a collective.
  Status loadStateDict(std::string_view fullState);
  // Merges shard frames (from localStateDict() at any world size) and loads the result.
  Status loadShardStateDicts(const std::vector<std::string>& shards);

  // Joinable.
  std::unique_ptr<join::JoinHook> joinHook(const join::JoinHookOptions& options) override;
  Device joinDevice() const override { return Device::cpu(); }
  comm::Backend& joinProcessGroup() override { return pg_; }

 private:
  ZeroRedundancyOptimizer(std::vector<Parameter*> params, comm::Backend& pg, std::vector<int> owners,
                          std::unique_ptr<Optimizer> local);
  Status syncParameters(Deadline deadline);
  Status loadFull(const OptimizerState& full);

  std::vector<Parameter*> params_;
  comm::Backend& pg_;
  std::vector<int> owners_;
  std::vector<std::vector<size_t>> shardOf_;  // shardOf_[r] = positions owned by rank r
  std::vector<size_t> shardNumel_;            // elements per rank
  std::unique_ptr<Optimizer> local_;          // over this rank's owned parameters
  std::vector<std::vector<float>> packed_;    // one broadcast buffer per owner
  double maxGradNorm_ = 0;                    // setMaxGradNorm; 0: no clipping
  double lastGradNorm_ = 0;
};

}  // namespace ddp::optim
