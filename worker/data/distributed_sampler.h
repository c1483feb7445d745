#pragma once
// DistributedSampler: which dataset indices each rank reads in each epoch (PyTorch's
// DistributedSampler semantics, plus an uneven mode for Join).
//  - The permutation of [0, N) depends only on (seed, epoch): identical on every rank.
//  - kPad (default): the permutation is padded by wrapping around to a multiple of world
//    size, so every rank gets ceil(N / W) samples; rank r takes positions r, r + W, ...
//  - kDropLast: the tail is dropped, every rank gets floor(N / W) samples.
//  - kUneven: no padding or dropping: rank r takes positions r, r + W, ... of the permutation
//    (counts differ by at most one), or, when `unevenCounts` is given, a contiguous slice of
//    the permutation with its own count (sum <= N). Ranks then run out of data at different
//    steps: the Join path.
// Resumable: state() = (epoch, position in this rank's list, segment start, samples consumed);
// restore() continues from it, at this world size or another (Note [Elastic sampler]).
// Thread model: a plain value owned by the data loading thread.
//
// Note [Elastic sampler]
// Every rank reads its list in lockstep (one batch per step), so after any step the ranks
// together have consumed a prefix of the epoch's permutation: with the strided layout (rank r
// takes positions r, r + W, ...) p samples each consumed exactly positions [0, p W); with the
// block layout (below) k blocks consumed [0, k B). That prefix length, `consumed`, does not
// depend on the world size, and it is saved with the position. restore() at the same layout
// continues at the saved position (bitwise the same run); at another world size or batch split
// it starts a new *segment* at `consumed`: the epoch's remaining positions [consumed, N) are
// dealt out over the new ranks, so within the epoch no sample is read twice and none is
// skipped (kPad still pads the segment's end by wrapping around, as it pads an epoch).
// Layouts, given `shares` (each rank's samples per step, SamplerConfig::shares):
//  - strided when every rank has the same share (or none is given): today's layout.
//  - block when shares differ (a global batch that the world size does not divide, Note
//    [Elastic batch] in worker/training/trainer.cc): the segment is cut into blocks of
//    B = sum(shares) positions; rank r reads the slice of each block after the shares of ranks
//    below it. The last block (L < B positions) is split by the same rounding rule (L / W each,
//    one more for the first L % W ranks); when L < W, kPad pads it to W positions and kDropLast
//    drops it, so every rank has the same number of steps.
// blockTotal() says how many samples all ranks read in the block of the last next(): the
// trainer weighs each rank's gradient by its part of it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::data {

enum class SamplerMode : uint8_t { kPad = 0, kDropLast, kUneven };
const char* samplerModeName(SamplerMode m);

struct SamplerConfig {
  int64_t datasetSize = 0;
  int rank = 0;
  int worldSize = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  SamplerMode mode = SamplerMode::kPad;
  std::vector<int64_t> unevenCounts;  // kUneven only: per-rank sample counts (optional)
  // Per-rank samples per step (size worldSize, each >= 1; not with kUneven): unequal shares
  // select the block layout (Note [Elastic sampler]). Empty: equal shares, strided layout.
  std::vector<int64_t> shares;
  Status validate() const;
};

struct SamplerState {
  uint64_t epoch = 0;
  int64_t position = 0;  // samples of this rank's list already handed out this epoch
  int64_t segmentStart = 0;  // permutation positions consumed before this rank's list began
  // Permutation positions all ranks consumed at `position` (Note [Elastic sampler]); the
  // dataset size once the epoch is done; -1: unknown (a state saved before this field existed).
  int64_t consumed = -1;
  bool operator==(const SamplerState&) const = default;
  std::string serialize() const;
  static Result<SamplerState> deserialize(const std::string& bytes);
};

class DistributedSampler {
 public:
  static Result<DistributedSampler> create(const SamplerConfig& config);

  // Starts `epoch` (new permutation) at position 0.
  void setEpoch(uint64_t epoch);
  uint64_t epoch() const { return state_.epoch; }
  // Samples this rank reads per epoch.
  int64_t numSamples() const { return static_cast<int64_t>(indices_.size()); }
  // This rank's indices for the current epoch, in reading order.
  const std::vector<int64_t>& indices() const { return indices_; }
  // Hands out up to `n` next indices (fewer at the epoch's end, none after it).
  std::vector<int64_t> next(int64_t n);
  int64_t remaining() const { return numSamples() - state_.position; }

  SamplerState state() const;
  // Rebuilds the epoch's permutation and moves to the saved position when `state` was saved with
  // this layout (by this rank or any other: the position follows from `consumed`); otherwise (another world size or batch split) starts a new segment of the
  // epoch at the saved `consumed` (Note [Elastic sampler]). `savedWorldSize` stands in for a
  // state without `consumed` (an older checkpoint: strided layout at that world size).
  Status restore(const SamplerState& state, int savedWorldSize = 0);
  // Samples every rank together read in the block of the last next() (Note [Elastic sampler]).
  int64_t blockTotal() const { return blockTotal_; }
  int64_t segmentStart() const { return segmentStart_; }
  // Permutation positions consumed when this rank's position is `position`.
  int64_t consumedAt(int64_t position) const;

  // The epoch's full permutation of [0, datasetSize) (identity without shuffle).
  static std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t epoch, bool shuffle);

 private:
  explicit DistributedSampler(SamplerConfig config) : config_(std::move(config)) {}
  void build();
  bool blockLayout() const;
  int64_t shareOf(int r) const;
  int64_t sharesTotal() const;
  // Block layout: the positions of the segment's last (partial) block, after padding or
  // dropping (0: none), and the full blocks before it.
  int64_t lastBlockSize() const;
  int64_t fullBlocks() const;
  // This rank's position in the current segment at which the ranks together consumed exactly
  // `consumed` positions of the epoch; nullopt when this layout never stops there.
  std::optional<int64_t> positionFor(int64_t consumed) const;

  SamplerConfig config_;
  SamplerState state_;  // epoch and position (segmentStart_ and consumedAt() fill the rest)
  int64_t segmentStart_ = 0;
  int64_t blockTotal_ = 0;
  std::vector<int64_t> indices_;
};

}  // namespace ddp::data
