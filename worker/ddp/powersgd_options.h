#pragma once
// PowerSgdOptions: the configuration of PowerSgdHook and BatchedPowerSgdHook (field names and
// defaults follow PyTorch's PowerSGDState), and CompressionStats, what the hooks report.
// Thread model: plain values.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp {

// What loadState() does with state saved at another world size (docs/POWERSGD.md).
// The values are hashed into the trainer's trajectory hash: 0 stays the default.
enum class WorldSizeChangePolicy : uint8_t {
  // Keep the iteration, RNG and Q memories (identical on every rank, valid at any world size);
  // every new rank gets the saved ranks' AVERAGE error-feedback buffer (Note [Error feedback at
  // another world size] in powersgd_state.h), which keeps the owed correction exact. Needs every
  // saved rank's state (the trainer's loading does it, redistributeErrorFeedback); a single
  // rank's state from another world size cannot be redistributed and resets as below.
  kRedistributeErrorFeedback = 0,
  // Refuse with FailedPrecondition.
  kFail = 1,
  // Keep the iteration, RNG and Q memories; drop the error-feedback buffers (per-rank residuals
  // of another data split) and log a warning.
  kResetErrorFeedback = 2,
};

struct PowerSgdOptions {
  // r: the rank of the approximation of each compressed matrix (min(n, m, r) per tensor).
  int64_t matrixApproximationRank = 1;
  // Plain allreduce (averaging) while iteration < this; PowerSGD from then on. Must be > 1 when
  // error feedback or warm start is on, because buckets are rebuilt after iteration 1.
  int64_t startPowerSgdIter = 1000;
  // Compress an n x m tensor only if (n + m) * r * rate < n * m.
  double minCompressionRate = 2.0;
  bool useErrorFeedback = true;
  // Reuse last step's Q (re-orthogonalised) instead of drawing a fresh random one.
  bool warmStart = true;
  // Added to column norms in Gram-Schmidt (0 keeps zero columns at zero: kernels/powersgd_ops.h).
  float orthogonalizationEpsilon = 0.0f;
  // Seeds the Q initialisation; identical on every replica.
  uint64_t randomSeed = 0;
  // Log compression statistics every this many iterations (from the start iteration).
  int64_t compressionStatsLoggingFrequency = 10000;
  // Multiply same-shaped adjacent tensors of a bucket in one batched product.
  bool batchTensorsWithSameShape = false;
  WorldSizeChangePolicy worldSizeChangePolicy = WorldSizeChangePolicy::kRedistributeErrorFeedback;

  // InvalidArgument naming the field and the reason.
  Status validate() const;
  std::string toString() const;
};

// Accumulated over every PowerSGD step since the start iteration (plain-allreduce steps are not
// counted), over every bucket.
struct CompressionStats {
  uint64_t numelBeforeCompression = 0;
  uint64_t numelAfterCompression = 0;
  uint64_t bytesBeforeCompression = 0;
  uint64_t bytesAfterCompression = 0;
  // numelBefore / numelAfter, 0 while nothing was compressed.
  double compressionRatio() const {
    return numelAfterCompression == 0 ? 0.0
                                      : static_cast<double>(numelBeforeCompression) / numelAfterCompression;
  }
};

}  // namespace ddp
