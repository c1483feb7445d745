#pragma once
// TokenSource: one split of a language model's tokens (training or validation), seen as a
// sequence [0, size()): a range of memory-mapped token files (tokens::MappedTokens, never read
// whole; the validation part of a split file is its last tokens) or an in-memory vector (the text
// dataset's bytes, tokens::bytesToTokens). Copies share the underlying mapping or vector.
// Thread model: fill() is const and reads the source only (MappedTokens reads are thread-safe);
// the TokenBatch it fills belongs to the caller.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tokens/mapped_tokens.h"
#include "worker/data/token_batch.h"

namespace ddp::data {

class TokenSource {
 public:
  TokenSource() = default;
  // Tokens [offset, offset + count) of `files`. Precondition: the range lies inside files.
  static TokenSource mapped(std::shared_ptr<const tokens::MappedTokens> files, int64_t offset, int64_t count);
  static TokenSource inMemory(std::vector<int32_t> tokens);

  int64_t size() const { return count_; }
  // Tokens [offset, offset + count) of this source, sharing it. Precondition: inside [0, size()).
  TokenSource slice(int64_t offset, int64_t count) const;
  // fillTokenBatch over this range: windows of contextLength + 1 tokens at `starts` (positions in
  // this source). OutOfRange when a window leaves the source; InvalidArgument when a token is >=
  // vocabSize, naming the file and the token's index in it (or its index in the vector).
  Status fill(std::span<const int64_t> starts, int contextLength, int64_t vocabSize, TokenBatch* out) const;

 private:
  std::shared_ptr<const tokens::MappedTokens> files_;
  std::shared_ptr<const std::vector<int32_t>> memory_;
  int64_t offset_ = 0;
  int64_t count_ = 0;
};

}  // namespace ddp::data
