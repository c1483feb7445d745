#include "worker/data/distributed_sampler.h"

#include <algorithm>
#include <numeric>

#include "common/binary_io.h"
#include "common/split_mix_rng.h"

namespace ddp::data {
namespace {

// Marks the elastic fields after (epoch, position) in a serialized state.
constexpr uint32_t kElasticStateMagic = 0x454c5353;  // "ELSS"

}  // namespace

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
  if (!shares.empty()) {
    if (mode == SamplerMode::kUneven) return invalidArgument("sampler: shares are not for the uneven mode");
    if (static_cast<int>(shares.size()) != worldSize) {
      return invalidArgument("sampler: shares has " + std::to_string(shares.size()) + " entries for world size " +
                             std::to_string(worldSize));
    }
    for (int64_t b : shares) {
      if (b < 1) return invalidArgument("sampler: every share must be >= 1");
    }
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
  w.put<uint32_t>(kElasticStateMagic);
  w.put<int64_t>(segmentStart);
  w.put<int64_t>(consumed);
  return w.take();
}

Result<SamplerState> SamplerState::deserialize(const std::string& bytes) {
  BinaryReader r(bytes, "sampler state");
  SamplerState s;
  DDP_RETURN_IF_ERROR(r.get(&s.epoch));
  DDP_RETURN_IF_ERROR(r.get(&s.position));
  if (r.atEnd()) return s;  // saved before the elastic fields: consumed unknown
  uint32_t magic = 0;
  DDP_RETURN_IF_ERROR(r.get(&magic));
  if (magic != kElasticStateMagic) return dataLoss("sampler state: unknown trailing fields");
  DDP_RETURN_IF_ERROR(r.get(&s.segmentStart));
  DDP_RETURN_IF_ERROR(r.get(&s.consumed));
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

bool DistributedSampler::blockLayout() const {
  const auto& b = config_.shares;
  return !b.empty() && std::any_of(b.begin(), b.end(), [&](int64_t x) { return x != b.front(); });
}

int64_t DistributedSampler::shareOf(int r) const { return config_.shares.at(static_cast<size_t>(r)); }

int64_t DistributedSampler::sharesTotal() const {
  return std::accumulate(config_.shares.begin(), config_.shares.end(), int64_t{0});
}

int64_t DistributedSampler::fullBlocks() const {
  return std::max<int64_t>(0, config_.datasetSize - segmentStart_) / sharesTotal();
}

int64_t DistributedSampler::lastBlockSize() const {
  const int64_t left = std::max<int64_t>(0, config_.datasetSize - segmentStart_) % sharesTotal();
  if (left == 0 || left >= config_.worldSize) return left;
  return config_.mode == SamplerMode::kPad ? config_.worldSize : 0;  // kDropLast drops it
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
  const int64_t start = segmentStart_;
  const int64_t left = std::max<int64_t>(0, n - start);  // the segment's positions
  if (left == 0) return;
  auto at = [&](int64_t pos) { return perm[static_cast<size_t>((start + pos) % n)]; };  // kPad wraps around
  if (blockLayout()) {
    const int64_t total = sharesTotal();
    int64_t offset = 0;
    for (int q = 0; q < r; ++q) offset += shareOf(q);
    const int64_t full = fullBlocks();
    for (int64_t k = 0; k < full; ++k) {
      for (int64_t j = 0; j < shareOf(static_cast<int>(r)); ++j) indices_.push_back(at(k * total + offset + j));
    }
    const int64_t last = lastBlockSize();
    if (last == 0) return;
    int64_t lastOffset = 0;
    for (int64_t q = 0; q < r; ++q) lastOffset += last / w + (q < last % w ? 1 : 0);
    const int64_t mine = last / w + (r < last % w ? 1 : 0);
    for (int64_t j = 0; j < mine; ++j) indices_.push_back(at(full * total + lastOffset + j));
    return;
  }
  int64_t count = left;  // kUneven: as is
  if (config_.mode == SamplerMode::kPad) count = (left + w - 1) / w * w;
  if (config_.mode == SamplerMode::kDropLast) count = left / w * w;
  for (int64_t pos = r; pos < count; pos += w) indices_.push_back(at(pos));
}

int64_t DistributedSampler::consumedAt(int64_t position) const {
  const int64_t n = config_.datasetSize;
  if (position >= numSamples()) return n;  // this rank's part of the epoch is done
  if (!blockLayout()) return std::min(n, segmentStart_ + position * config_.worldSize);
  const int64_t blocks = std::min(position / shareOf(config_.rank), fullBlocks());
  return std::min(n, segmentStart_ + blocks * sharesTotal());
}

SamplerState DistributedSampler::state() const {
  SamplerState s = state_;
  s.segmentStart = segmentStart_;
  s.consumed = consumedAt(state_.position);
  return s;
}

void DistributedSampler::setEpoch(uint64_t epoch) {
  state_ = {epoch, 0};
  segmentStart_ = 0;
  build();
}

std::vector<int64_t> DistributedSampler::next(int64_t n) {
  const int64_t take = std::max<int64_t>(0, std::min(n, remaining()));
  std::vector<int64_t> out(indices_.begin() + state_.position,
                           indices_.begin() + state_.position + take);
  if (blockLayout()) {
    const bool inFullBlock = state_.position / shareOf(config_.rank) < fullBlocks();
    blockTotal_ = inFullBlock ? sharesTotal() : lastBlockSize();
  } else {
    blockTotal_ = take * config_.worldSize;
  }
  state_.position += take;
  return out;
}

std::optional<int64_t> DistributedSampler::positionFor(int64_t consumed) const {
  if (consumed >= config_.datasetSize) return numSamples();
  const int64_t done = consumed - segmentStart_;
  if (done < 0) return std::nullopt;
  if (!blockLayout()) {
    if (done % config_.worldSize != 0 || done / config_.worldSize > numSamples()) return std::nullopt;
    return done / config_.worldSize;
  }
  if (done % sharesTotal() != 0 || done / sharesTotal() > fullBlocks()) return std::nullopt;
  return done / sharesTotal() * shareOf(config_.rank);
}

Status DistributedSampler::restore(const SamplerState& state, int savedWorldSize) {
  if (state.epoch != state_.epoch || segmentStart_ != 0) {
    state_.epoch = state.epoch;
    segmentStart_ = 0;
    build();
  }
  const bool sameWorld = savedWorldSize <= 0 || savedWorldSize == config_.worldSize;
  if (state.consumed < 0 && sameWorld) {
    // Saved before the elastic fields, by this layout: the position as it was.
    if (state.position < 0 || state.position > numSamples()) {
      return outOfRange("sampler: saved position " + std::to_string(state.position) +
                        " outside this rank's epoch of " + std::to_string(numSamples()) +
                        " samples (dataset or world size changed?)");
    }
    state_.position = state.position;
    return Status::ok();
  }
  // Saved before the elastic fields at another world size: its strided layout from the epoch's start.
  const int64_t consumed =
      state.consumed >= 0 ? state.consumed : std::min(config_.datasetSize, state.position * savedWorldSize);
  if (consumed < 0 || consumed > config_.datasetSize || state.segmentStart < 0 || state.segmentStart > consumed) {
    return outOfRange("sampler: saved state (segment " + std::to_string(state.segmentStart) + ", consumed " +
                      std::to_string(consumed) + ") does not fit an epoch of " +
                      std::to_string(config_.datasetSize) + " samples (dataset changed?)");
  }
  if (state.segmentStart != segmentStart_) {
    segmentStart_ = state.segmentStart;
    build();
  }
  // This rank's position in the saved segment, when this layout consumed exactly that much
  // there (the same world size and split: bitwise the same run); any rank's state serves.
  if (auto position = positionFor(consumed)) {
    state_.position = *position;
    return Status::ok();
  }
  // Another layout (world size or batch split): a new segment from what every rank consumed.
  segmentStart_ = consumed;
  state_.position = 0;
  build();
  return Status::ok();
}

}  // namespace ddp::data
