#pragma once
// TokenWindowSampler: which windows of a token sequence (common/tokens) each rank reads at each
// step of language-model training, and the validation windows.
// Thread model: a plain value; every method is const and pure (no state advances with the steps).
//
// Note [Token windows]
// A sample is a window of T + 1 consecutive tokens (T = contextLength): the inputs are its first
// T tokens, the targets the next T (the same window shifted by one).
//  - Training: global sample i of step s starts at
//        hash(seed, s, i) mod (N - (T + 1) + 1)        (N: tokens in the source)
//    with hash = SplitMixRng::mix(SplitMixRng::mix(seed, s), i), a counter-based hash: a window
//    depends on (seed, step, global index) alone, never on what was read before. The step's
//    global batch of B = sum(shares) samples is cut in rank order: rank r takes the global
//    indices [shares[0] + ... + shares[r - 1], ... + shares[r]) (equal shares: [r b, (r + 1) b)).
//    So a job resumed at any step reads bitwise the windows it would have read, and the same
//    global batch split over another world size (elastic, Note [Elastic batch]) reads the same
//    B windows, only dealt out differently. Windows are drawn with replacement: there are no
//    epochs, and any two may overlap.
//  - Validation: sequential and non-overlapping (their inputs do not overlap): window k starts at
//    k T, for k < floor((N - 1) / T) (each fits whole), the first `limit` of them (0: all). Rank
//    r of W takes the windows k = r, r + W, r + 2W, ... (counts differ by at most one: sum the
//    loss and the count over ranks, not the per-rank means).

#include <cstdint>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ddp::data {

struct TokenWindowConfig {
  int64_t totalTokens = 0;  // N: tokens in the training source
  int contextLength = 0;    // T; a window is T + 1 tokens
  uint64_t seed = 0;
  int rank = 0;
  int worldSize = 1;
  int64_t batchPerRank = 1;  // windows per rank per step (equal shares), >= 1
  // Per-rank windows per step (size worldSize, each >= 1) when the global batch is not split
  // evenly (Note [Elastic batch]); empty: batchPerRank each.
  std::vector<int64_t> shares;
  int64_t windowTokens() const { return int64_t{contextLength} + 1; }
  // contextLength >= 1, at least one window in totalTokens, 0 <= rank < worldSize, shares.
  Status validate() const;
};

class TokenWindowSampler {
 public:
  static Result<TokenWindowSampler> create(TokenWindowConfig config);

  // Windows all ranks read per step, and this rank's part: global indices
  // [firstIndex(), firstIndex() + localBatch()).
  int64_t globalBatch() const { return globalBatch_; }
  int64_t firstIndex() const { return firstIndex_; }
  int64_t localBatch() const { return localBatch_; }

  // The starts of this rank's training windows at `step`, in global index order.
  std::vector<int64_t> trainStarts(uint64_t step) const;

  // The start of global sample `index` of `step` (Note [Token windows]). Precondition:
  // totalTokens >= windowTokens >= 1.
  static int64_t trainWindowStart(uint64_t seed, uint64_t step, uint64_t index, int64_t totalTokens,
                                  int64_t windowTokens);

  const TokenWindowConfig& config() const { return config_; }

 private:
  explicit TokenWindowSampler(TokenWindowConfig config) : config_(std::move(config)) {}

  TokenWindowConfig config_;
  int64_t globalBatch_ = 0;
  int64_t firstIndex_ = 0;
  int64_t localBatch_ = 0;
};

// Validation windows of a source of `totalTokens` tokens (Note [Token windows]): how many there
// are over all ranks (at most `limit`, 0: no limit), and the starts of rank `rank` of
// `worldSize`'s, in order. Preconditions: contextLength >= 1, 0 <= rank < worldSize, limit >= 0.
int64_t valWindowCount(int64_t totalTokens, int contextLength, int64_t limit);
std::vector<int64_t> valWindowStarts(int64_t totalTokens, int contextLength, int64_t limit, int rank,
                                     int worldSize);

}  // namespace ddp::data
