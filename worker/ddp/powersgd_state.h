#pragma once
// PowerSgdState: everything PowerSgdHook / BatchedPowerSgdHook carry from one step to the next,
// and its versioned, checksummed binary form (docs/POWERSGD.md, "State format").
//
// Note [PowerSGD state keys]
// PyTorch keys error feedback and P/Q memories by bucket index. A restarted process's first
// iteration runs with the pre-rebuild bucket layout, so index-keyed buffers land on the wrong
// gradients and the resumed run silently diverges. Here:
//  - error feedback and Q memories of PowerSgdHook are kept PER TENSOR, keyed by the parameter's
//    name (or "bucket <identity>/<i>" for an unnamed one), so any bucket layout finds them;
//  - the batched hook's Q (one square matrix per bucket) can only be keyed by the bucket's
//    content identity (GradBucket::identity()); its error feedback is still per tensor;
//  - P is not state: every step recomputes it as M Q before reading it;
//  - the RNG is counter-based: a fresh Q for key k at iteration i is drawn from
//    hash(randomSeed, i, k), so the RNG state is (randomSeed, iteration) and is independent of
//    how many draws other buckets made.
//
// Thread model: plain value; the hooks guard theirs with their own mutex.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/ddp/powersgd_options.h"

namespace ddp {

struct PowerSgdTensorState {
  // The matrix view M (rows x cols) of the tensor the buffers belong to.
  uint64_t rows = 0;
  uint64_t cols = 0;
  // rows * cols local compression error, or empty (none yet). See errorDeferred.
  std::vector<float> error;
  // Warm-start memory: Q (cols x rank, row-major) of the last step, or empty.
  uint64_t rank = 0;
  std::vector<float> q;
  // In memory only, never serialised (Note [Deferred error feedback] in kernels/powersgd_ops.h):
  // while errorDeferred, `error` holds the compensated gradient S of the last step and the error
  // is S - sentP sentQ^T. PowerSgdHookBase::saveState() and stateSnapshot() materialise it, so
  // every state that leaves the hook holds the error itself.
  bool errorDeferred = false;
  std::vector<float> sentP;  // rows x rank: the P of the approximation last sent
  std::vector<float> sentQ;  // cols x rank: its Q
  // Set by the step's first pass (`error` then holds this step's compensated gradient), cleared
  // by its finish(). Still set at the next step or at a save: the step in between failed, and
  // the error feedback of this tensor is dropped (a warning says so).
  bool midStep = false;
};

struct PowerSgdBucketState {
  // Batched hook: the bucket is viewed as side x side; Q is side x rank.
  uint64_t side = 0;
  uint64_t rank = 0;
  std::vector<float> q;
};

struct PowerSgdState {
  static constexpr uint32_t kMagic = 0x44475350;  // "PSGD"
  static constexpr uint32_t kVersion = 1;

  std::string hookName;   // "powersgd" or "batched_powersgd"
  int32_t worldSize = 0;  // at save time
  int32_t rank = 0;       // at save time (informational)
  uint64_t iteration = 0;
  uint64_t randomSeed = 0;
  CompressionStats stats;
  uint64_t nextStatsReport = 0;
  std::map<std::string, PowerSgdTensorState> tensors;
  std::map<uint64_t, PowerSgdBucketState> buckets;

  // The framed bytes (common/binary_io.h writeFramed with kMagic / kVersion).
  std::string serialize() const;
  // DataLoss on a bad frame (magic, version, length, checksum), truncated or trailing bytes, or
  // buffers whose sizes contradict their shapes.
  static Result<PowerSgdState> deserialize(std::string_view bytes);
};

// Note [Error feedback at another world size]
// Each rank's error buffer e_r is its compensated gradient minus the approximation of the
// world's AVERAGE compensated gradient (the hook averages P Q^T over the ranks), and P and Q are
// linear in the sum of the ranks' compensated gradients: only the average of the errors,
// (sum_r e_r) / N, reaches the parameters at the next step. So a job that resumes at world size
// M gives EVERY new rank that average, e'_m = (sum_{r<N} e_r) / N: the average over the new
// ranks is again (sum_r e_r) / N, the correction the uninterrupted run would have applied, and
// the residual owed to the update is carried over exactly (only its split over ranks, which
// the update never sees, changes). The sum is taken in double in old-rank order, then rounded
// to f32. A rank whose buffer is empty (none yet) counts as zeros; a tensor whose shape differs
// between the saved ranks starts afresh (counted in `dropped`). Iteration, RNG, statistics, Q
// memories and the batched hook's buckets are identical on every rank and come from saved[0].
// (Giving each new rank (sum_r e_r) / M instead would keep the sum, not the average, and scale
// the correction by N / M.)

// The state new rank `newRank` of a `newWorld`-rank job loads (worldSize = newWorld, rank =
// newRank; the hook then loads it as its own). `saved[r]` is old rank r's state, all of one
// hook. InvalidArgument when `saved` is empty, mixes hooks or disagrees on the iteration.
Result<PowerSgdState> redistributeErrorFeedback(const std::vector<PowerSgdState>& saved, int newRank, int newWorld,
                                                size_t* dropped = nullptr);

// FNV-1a 64 of `s` (common/fnv1a.h; stable across builds): derives the per-tensor seeds.
uint64_t stableHash(std::string_view s);

}  // namespace ddp
