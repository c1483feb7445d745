#pragma once
// TokenBatch: a language-model batch, the windows a TokenWindowSampler chose (Note [Token
// windows] in token_window_sampler.h) copied out of a token source as int32 inputs and targets.
// Sources: the mapped token files of a job (tokens::MappedTokens) or an in-memory token vector
// (the text dataset: tokens::bytesToTokens, split into training and validation by splitTokens).
// Thread model: a TokenBatch is a plain value owned by one thread; filling reads the source only
// (MappedTokens reads are thread-safe; an in-memory vector must not change while it is read).

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/tokens/mapped_tokens.h"

namespace ddp::data {

struct TokenBatch {
  int size = 0;           // windows in this batch
  int contextLength = 0;  // T
  // size x T, row-major: row i is window i's first T tokens; targets[i][j] is the token after
  // inputs[i][j]. Buffers are reused from fill to fill (capacity may be larger).
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
};

// Fills `out` with the windows of contextLength + 1 tokens that start at `starts`. OutOfRange when
// a window does not lie inside the source; InvalidArgument when contextLength < 1 or a token is
// >= vocabSize (naming the file and the token's index in it, or its index in the vector).
Status fillTokenBatch(const tokens::MappedTokens& source, std::span<const int64_t> starts, int contextLength,
                      int64_t vocabSize, TokenBatch* out);
Status fillTokenBatch(std::span<const int32_t> source, std::span<const int64_t> starts, int contextLength,
                      int64_t vocabSize, TokenBatch* out);

struct TokenSplit {
  std::vector<int32_t> train;  // the first part
  std::vector<int32_t> val;    // the last tokens::valTokenCount(total, valFraction)
};

// Splits an in-memory token sequence: the last `valFraction` in [0, 1) of it is validation (the
// same rule as `ddpctl tokenize`). InvalidArgument when valFraction is outside [0, 1), when the
// training part, or (valFraction > 0) the validation part, is shorter than one window of
// contextLength + 1 tokens. valFraction 0: no validation part (val empty).
Result<TokenSplit> splitTokens(std::vector<int32_t> tokens, double valFraction, int contextLength);

}  // namespace ddp::data
