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
// Resumable: state() = (epoch, position in this rank's list); restore() continues from it.
// Thread model: a plain value owned by the data loading thread.

#include <cstdint>
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
  Status validate() const;
};

struct SamplerState {
  uint64_t epoch = 0;
  int64_t position = 0;  // samples of this rank's list already handed out this epoch
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

  SamplerState state() const { return state_; }
  // Rebuilds the epoch's permutation and moves to the saved position.
  Status restore(const SamplerState& state);

  // The epoch's full permutation of [0, datasetSize) (identity without shuffle).
  static std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t epoch, bool shuffle);

 private:
  explicit DistributedSampler(SamplerConfig config) : config_(std::move(config)) {}
  void build();

  SamplerConfig config_;
  SamplerState state_;
  std::vector<int64_t> indices_;
};

}  // namespace ddp::data
