#pragma once
// DistributedFusedAdam: ZeRO-2 style Adam / AdamW (apex's DistributedFusedAdam, CPU first).
//
// Gradients and optimizer state are sharded: parameters are packed into contiguous buckets
// (dfa_layout.h, default 100 MiB), each split into world-size shards of 128-byte multiples.
//  - Backward: the model calls gradReadyFn() for each parameter as its gradient is final. The
//    gradient is copied into its bucket; a bucket whose gradients are all in is reduce-scattered
//    (sum) at once, overlapped with the rest of backward, with at most maxBucketsInFlight
//    buckets outstanding (the oldest is waited for before another is launched). Buckets are
//    launched in bucket order on every rank (Note [Hook ordering] in worker/ddp/comm_hook.h).
//    The reduced shard is ADDED to this rank's gradient shard: several backwards before one
//    step() accumulate gradients in the 1/world shard, never in a full-size buffer (the ZeRO-2
//    trade: one reduce-scatter per micro-step, bounded memory).
//  - step(): finishes the reduction, computes the global gradient norm (allreduced sum of the
//    shards' squares, of the world-averaged gradient), clips by maxGradNorm if set
//    (clipCoefficient of grad_norm.h: maxGradNorm / (norm + 1e-6) when the norm exceeds it, as
//    torch.nn.utils.clip_grad_norm_), then per bucket runs the fused Adam kernel on the local
//    shard (averaging and clipping folded into its gradScale) and launches the all-gather of the
//    updated parameters at once (the all-gather of one bucket overlaps the update of the next).
//  - Decay groups (weightDecayMask, spec.optimizer.weightDecayOn): the shard is cut into runs of
//    elements that decay or not (dfaDecayRuns in dfa_layout.h: a parameter's elements follow its
//    mask entry wherever the shard boundaries cut it); the non-decaying runs step with weight
//    decay 0. The mask is not state: the state stream is unchanged.
//  - If no gradient was marked ready since the last step, step() reads every parameter's grad
//    itself (models without grad-ready hooks still work, without overlap).
//
// State: one step count for the whole optimizer, exp_avg and exp_avg_sq shards. The state dict
// (Note [DFA state stream] in distributed_fused_adam_state.cc) is streamed to one rank in
// chunks of at most stateChunkBytes, so no rank ever holds a temporary larger than one chunk
// however big the model is; loading takes the full stream at any world size (resharding).
//
// Thread model: not thread-safe. gradReadyFn() is called on the thread running backward, which
// is the training thread that also calls step(); collectives are async and waited on there.

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/core/parameter.h"
#include "worker/optim/dfa_layout.h"
#include "worker/optim/optimizer_config.h"

namespace ddp::optim {

inline constexpr size_t kDefaultDfaBucketBytes = size_t{100} << 20;
inline constexpr size_t kDefaultDfaStateChunkBytes = size_t{4} << 20;

struct DistributedFusedAdamOptions {
  OptimizerConfig config = OptimizerConfig::adam();  // kind kAdam or kAdamW
  size_t bucketCapBytes = kDefaultDfaBucketBytes;
  int maxBucketsInFlight = 2;
  float maxGradNorm = 0.f;  // 0: no clipping
  // Weight decay applies to parameter i only where weightDecayMask[i] (empty: to every one).
  std::vector<bool> weightDecayMask;
  size_t stateChunkBytes = kDefaultDfaStateChunkBytes;
  Status validate() const;
};

// Receives the state stream piece by piece on the root rank.
using StateSink = std::function<Status(std::string_view bytes)>;

class DistributedFusedAdam {
 public:
  static Result<std::unique_ptr<DistributedFusedAdam>> create(std::vector<Parameter*> params, comm::Backend& pg,
                                                              DistributedFusedAdamOptions options = {});
  ~DistributedFusedAdam();
  DistributedFusedAdam(const DistributedFusedAdam&) = delete;
  DistributedFusedAdam& operator=(const DistributedFusedAdam&) = delete;

  // For the model's backward: marks parameter `index` ready (its grad is final).
  GradReadyFn gradReadyFn();
  void markGradReady(size_t index);

  // Launches any bucket not yet launched (reading those gradients now), waits for every
  // reduce-scatter and accumulates into the shard. step() calls it.
  Status finishBackward(Deadline deadline);
  Status step(Deadline deadline);
  Status step() { return step(Deadline::after(pg_.defaultTimeout())); }

  // Norm of the world-averaged gradient used by the last step (before clipping).
  double lastGradNorm() const { return lastGradNorm_; }
  // Collective: finishes the backward and returns the global norm of the averaged gradient.
  Result<double> gradNorm(Deadline deadline);

  float lr() const { return options_.config.lr; }
  void setLr(float lr) { options_.config.lr = lr; }
  int64_t stepCount() const { return step_; }
  const DfaLayout& layout() const { return layout_; }
  // Optimizer-state bytes on this rank (exp_avg + exp_avg_sq shards).
  size_t stateBytes() const;

  // Collective. Streams the full state to `sink` on rank `root` (others pass anything).
  Status gatherStateDict(int root, const StateSink& sink, Deadline deadline);
  // Convenience: the stream as one string on `root` (empty elsewhere).
  Result<std::string> stateDict(int root, Deadline deadline);
  // Loads a full state stream (from any world size or bucket cap). Not a collective.
  Status loadStateDict(std::string_view state);
  // Largest temporary buffer (bytes) the last gatherStateDict() allocated on this rank.
  size_t lastGatherPeakTempBytes() const { return lastGatherPeakTempBytes_; }

 private:
  DistributedFusedAdam(std::vector<Parameter*> params, comm::Backend& pg, DistributedFusedAdamOptions options,
                       DfaLayout layout);
  void copyGradIntoBucket(size_t index);
  void launchReadyBuckets();
  void launch(size_t bucket);
  Status completeOldest(Deadline deadline);
  Status computeNorm(Deadline deadline, double* norm);
  // The fused Adam on this rank's shard of bucket b (scratch_[b] holds the parameters).
  void updateShard(size_t b, float gradScale);
  Status unpackParameters(std::vector<comm::WorkPtr>& works, Deadline deadline);

  struct InFlight {
    size_t bucket;
    comm::WorkPtr work;
  };

  std::vector<Parameter*> params_;
  comm::Backend& pg_;
  DistributedFusedAdamOptions options_;
  DfaLayout layout_;
  const int rank_;
  const int world_;

  // Per bucket.
  std::vector<std::vector<float>> full_;       // padded full bucket (grads, then gathered params)
  std::vector<std::vector<float>> scratch_;    // reduce-scatter output when accumulating; parameter shard
  std::vector<std::vector<float>> gradShard_;  // accumulated summed gradient shard
  std::vector<std::vector<float>> expAvg_, expAvgSq_;
  std::vector<size_t> readyCount_;
  std::vector<std::vector<DfaDecayRun>> decayRuns_;  // per bucket; empty without a mask

  std::vector<bool> paramReady_;
  size_t nextToLaunch_ = 0;
  bool backwardActive_ = false;  // some gradient was marked since the last finishBackward
  int accumulated_ = 0;          // backwards reduced into gradShard_ since the last step
  std::deque<InFlight> inFlight_;
  Status pendingError_;          // first error seen inside gradReadyFn (reported by step)
  int64_t step_ = 0;
  double lastGradNorm_ = 0;
  size_t lastGatherPeakTempBytes_ = 0;
};

}  // namespace ddp::optim
