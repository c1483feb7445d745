#include "worker/data/distributed_sampler.h"

#include <numeric>

#include "common/binary_io.h"
#include "common/split_mix_rng.h"

namespace ddp::data {

const char* samplerModeName(SamplerMode m) {
  switch (m) {
    case SamplerMode::kPad: return "pad";
    case SamplerMode::kDropLast: return "dropLast";
    case SamplerMode::kUneven: return "uneven";
  }
  return "?";
}

Status SamplerConfig::validate() const {
  if (datasetSize < 0) return invalidArgument("sampler: datasetSize must be >= 0");
  if (worldSize < 1) return invalidArgument("sampler: worldSize must be >= 1");
  if (rank < 0 || rank >= worldSize) {
    return invalidArgument("sampler: rank " + std::to_string(rank) + " outside [0, " +
                           std::to_string(worldSize) + ")");
  }
  if (!unevenCounts.empty()) {
    if (mode != SamplerMode::kUneven) {
      return invalidArgument("sampler: unevenCounts given but mode is not uneven");
    }
    if (static_cast<int>(unevenCounts.size()) != worldSize) {
      return invalidArgument("sampler: unevenCounts has " + std::to_string(unevenCounts.size()) +
                             " entries for world size " + std::to_string(worldSize));
    }
    int64_t sum = 0;
    for (int64_t c : unevenCounts) {
      if (c < 0) return invalidArgument("sampler: unevenCounts entries must be >= 0");
      sum += c;
    }
    if (sum > datasetSize) {
      return invalidArgument("sampler: unevenCounts sum to " + std::to_string(sum) +
                             ", more than the dataset's " + std::to_string(datasetSize));
    }
  }
  return Status::ok();
}

std::string SamplerState::serialize() const {
  BinaryWriter w;
  w.put<uint64_t>(epoch);
  w.put<int64_t>(position);
  return w.take();
}

Result<SamplerState> SamplerState::deserialize(const std::string& bytes) {
  BinaryReader r(bytes, "sampler state");
  SamplerState s;
  DDP_RETURN_IF_ERROR(r.get(&s.epoch));
  DDP_RETURN_IF_ERROR(r.get(&s.position));
  if (!r.atEnd()) return dataLoss("sampler state: trailing bytes");
  return s;
}

Result<DistributedSampler> DistributedSampler::create(const SamplerConfig& config) {
  DDP_RETURN_IF_ERROR(config.validate());
  DistributedSampler s(config);
  s.build();
  return s;
}

std::vector<int64_t> DistributedSampler::permutation(int64_t n, uint64_t seed, uint64_t epoch,
                                                     bool shuffle) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  if (!shuffle) return perm;
  SplitMixRng rng(SplitMixRng::mix(seed, epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.below(static_cast<uint64_t>(i + 1))]);
  }
  return perm;
}

void DistributedSampler::build() {
  const int64_t n = config_.datasetSize;
  const int64_t w = config_.worldSize;
  const int64_t r = config_.rank;
  std::vector<int64_t> perm = permutation(n, config_.seed, state_.epoch, config_.shuffle);
  indices_.clear();
  if (config_.mode == SamplerMode::kUneven && !config_.unevenCounts.empty()) {
    int64_t begin = 0;
    for (int64_t i = 0; i < r; ++i) begin += config_.unevenCounts[i];
    indices_.assign(perm.begin() + begin, perm.begin() + begin + config_.unevenCounts[r]);
    return;
  }
  int64_t total = n;  // kUneven: as is
  if (config_.mode == SamplerMode::kPad) total = n == 0 ? 0 : (n + w - 1) / w * w;
  if (config_.mode == SamplerMode::kDropLast) total = n / w * w;
  for (int64_t pos = r; pos < total; pos += w) indices_.push_back(perm[pos % n]);
}

void DistributedSampler::setEpoch(uint64_t epoch) {
  state_ = {epoch, 0};
  build();
}

std::vector<int64_t> DistributedSampler::next(int64_t n) {
  const int64_t take = std::max<int64_t>(0, std::min(n, remaining()));
  std::vector<int64_t> out(indices_.begin() + state_.position,
                           indices_.begin() + state_.position + take);
  state_.position += take;
  return out;
}

Status DistributedSampler::restore(const SamplerState& state) {
  if (state.epoch != state_.epoch) {
    state_.epoch = state.epoch;
    build();
  }
  if (state.position < 0 || state.position > numSamples()) {
    return outOfRange("sampler: saved position " + std::to_string(state.position) +
                      " outside this rank's epoch of " + std::to_string(numSamples()) +
                      " samples (dataset or world size changed?)");
  }
  state_.position = state.position;
  return Status::ok();
}

}  // namespace ddp::data
