#include "worker/data/token_source.h"

namespace ddp::data {

TokenSource TokenSource::mapped(std::shared_ptr<const tokens::MappedTokens> files, int64_t offset, int64_t count) {
  TokenSource s;
  s.files_ = std::move(files);
  s.offset_ = offset;
  s.count_ = count;
  return s;
}

TokenSource TokenSource::inMemory(std::vector<int32_t> tokens) {
  TokenSource s;
  s.count_ = static_cast<int64_t>(tokens.size());
  s.memory_ = std::make_shared<const std::vector<int32_t>>(std::move(tokens));
  return s;
}

TokenSource TokenSource::slice(int64_t offset, int64_t count) const {
  TokenSource s = *this;
  s.offset_ = offset_ + offset;
  s.count_ = count;
  return s;
}

Status TokenSource::fill(std::span<const int64_t> starts, int contextLength, int64_t vocabSize, TokenBatch* out) const {
  for (int64_t s : starts) {
    if (s < 0 || s + contextLength + 1 > count_) {
      return outOfRange("window [" + std::to_string(s) + ", " + std::to_string(s + contextLength + 1) +
                        ") is outside the token source of " + std::to_string(count_) + " tokens");
    }
  }
  if (memory_) {
    const std::span<const int32_t> all(*memory_);
    return fillTokenBatch(all.subspan(static_cast<size_t>(offset_), static_cast<size_t>(count_)), starts, contextLength,
                          vocabSize, out);
  }
  if (!files_) return failedPrecondition("empty token source");
  if (offset_ == 0) return fillTokenBatch(*files_, starts, contextLength, vocabSize, out);
  std::vector<int64_t> shifted(starts.begin(), starts.end());
  for (int64_t& s : shifted) s += offset_;
  return fillTokenBatch(*files_, shifted, contextLength, vocabSize, out);
}

}  // namespace ddp::data
