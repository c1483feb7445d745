#include "worker/data/token_window_sampler.h"

#include <string>

#include "common/split_mix_rng.h"

namespace ddp::data {

Status TokenWindowConfig::validate() const {
  if (contextLength < 1) return invalidArgument("contextLength " + std::to_string(contextLength) + " must be >= 1");
  if (totalTokens < windowTokens()) {
    return invalidArgument("the token source holds " + std::to_string(totalTokens) + " tokens, fewer than one window of " +
                           std::to_string(windowTokens()) + " (contextLength + 1)");
  }
  if (worldSize < 1 || rank < 0 || rank >= worldSize) {
    return invalidArgument("rank " + std::to_string(rank) + " of world size " + std::to_string(worldSize));
  }
  if (shares.empty()) {
    if (batchPerRank < 1) return invalidArgument("batchPerRank " + std::to_string(batchPerRank) + " must be >= 1");
    return Status::ok();
  }
  if (static_cast<int64_t>(shares.size()) != worldSize) {
    return invalidArgument(std::to_string(shares.size()) + " shares for world size " + std::to_string(worldSize));
  }
  for (size_t r = 0; r < shares.size(); ++r) {
    if (shares[r] < 1) return invalidArgument("share of rank " + std::to_string(r) + " must be >= 1");
  }
  return Status::ok();
}

Result<TokenWindowSampler> TokenWindowSampler::create(TokenWindowConfig config) {
  DDP_RETURN_IF_ERROR(config.validate());
  TokenWindowSampler s(std::move(config));
  const TokenWindowConfig& c = s.config_;
  if (c.shares.empty()) {
    s.localBatch_ = c.batchPerRank;
    s.firstIndex_ = c.rank * c.batchPerRank;
    s.globalBatch_ = c.worldSize * c.batchPerRank;
  } else {
    for (int r = 0; r < c.worldSize; ++r) {
      if (r < c.rank) s.firstIndex_ += c.shares[static_cast<size_t>(r)];
      s.globalBatch_ += c.shares[static_cast<size_t>(r)];
    }
    s.localBatch_ = c.shares[static_cast<size_t>(c.rank)];
  }
  return s;
}

int64_t TokenWindowSampler::trainWindowStart(uint64_t seed, uint64_t step, uint64_t index, int64_t totalTokens,
                                             int64_t windowTokens) {
  const uint64_t h = SplitMixRng::mix(SplitMixRng::mix(seed, step), index);
  return static_cast<int64_t>(h % static_cast<uint64_t>(totalTokens - windowTokens + 1));
}

std::vector<int64_t> TokenWindowSampler::trainStarts(uint64_t step) const {
  std::vector<int64_t> starts(static_cast<size_t>(localBatch_));
  for (int64_t i = 0; i < localBatch_; ++i) {
    starts[static_cast<size_t>(i)] = trainWindowStart(config_.seed, step, static_cast<uint64_t>(firstIndex_ + i),
                                                      config_.totalTokens, config_.windowTokens());
  }
  return starts;
}

int64_t valWindowCount(int64_t totalTokens, int contextLength, int64_t limit) {
  if (contextLength < 1 || totalTokens < int64_t{contextLength} + 1) return 0;
  const int64_t all = (totalTokens - 1) / contextLength;
  return limit > 0 && limit < all ? limit : all;
}

std::vector<int64_t> valWindowStarts(int64_t totalTokens, int contextLength, int64_t limit, int rank,
                                     int worldSize) {
  std::vector<int64_t> starts;
  if (worldSize < 1 || rank < 0 || rank >= worldSize) return starts;
  const int64_t count = valWindowCount(totalTokens, contextLength, limit);
  if (count > rank) starts.reserve(static_cast<size_t>((count - rank + worldSize - 1) / worldSize));
  for (int64_t k = rank; k < count; k += worldSize) starts.push_back(k * contextLength);
  return starts;
}

}  // namespace ddp::data
