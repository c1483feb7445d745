#include "worker/data/token_batch.h"

#include <algorithm>
#include <string>

#include "common/tokens/byte_tokens.h"

namespace ddp::data {
namespace {

Status prepare(std::span<const int64_t> starts, int contextLength, int64_t sourceSize, TokenBatch* out) {
  if (contextLength < 1) return invalidArgument("contextLength " + std::to_string(contextLength) + " must be >= 1");
  for (int64_t s : starts) {
    if (s < 0 || s > sourceSize - contextLength - 1) {
      return outOfRange("window [" + std::to_string(s) + ", " + std::to_string(s + contextLength + 1) +
                        ") is not inside the " + std::to_string(sourceSize) + " tokens of the source");
    }
  }
  const size_t n = starts.size() * static_cast<size_t>(contextLength);
  out->size = static_cast<int>(starts.size());
  out->contextLength = contextLength;
  out->inputs.resize(n);
  out->targets.resize(n);
  return Status::ok();
}

// Window i's targets are its inputs shifted by one, then the token after them (`last`).
void shiftTargets(int32_t* inputsRow, int32_t* targetsRow, int contextLength, int32_t last) {
  std::copy(inputsRow + 1, inputsRow + contextLength, targetsRow);
  targetsRow[contextLength - 1] = last;
}

}  // namespace

Status fillTokenBatch(const tokens::MappedTokens& source, std::span<const int64_t> starts, int contextLength,
                      int64_t vocabSize, TokenBatch* out) {
  DDP_RETURN_IF_ERROR(prepare(starts, contextLength, source.size(), out));
  for (size_t i = 0; i < starts.size(); ++i) {
    int32_t* in = out->inputs.data() + i * static_cast<size_t>(contextLength);
    int32_t* tg = out->targets.data() + i * static_cast<size_t>(contextLength);
    DDP_RETURN_IF_ERROR(source.read(starts[i], contextLength, vocabSize, in));
    int32_t last = 0;
    DDP_RETURN_IF_ERROR(source.read(starts[i] + contextLength, 1, vocabSize, &last));
    shiftTargets(in, tg, contextLength, last);
  }
  return Status::ok();
}

Status fillTokenBatch(std::span<const int32_t> source, std::span<const int64_t> starts, int contextLength,
                      int64_t vocabSize, TokenBatch* out) {
  DDP_RETURN_IF_ERROR(prepare(starts, contextLength, static_cast<int64_t>(source.size()), out));
  for (size_t i = 0; i < starts.size(); ++i) {
    const int32_t* window = source.data() + starts[i];
    for (int j = 0; j <= contextLength; ++j) {
      if (window[j] < 0 || window[j] >= vocabSize) {
        return invalidArgument("token " + std::to_string(window[j]) + " at index " + std::to_string(starts[i] + j) +
                               " of the in-memory tokens is outside the vocabulary of " + std::to_string(vocabSize) +
                               " tokens");
      }
    }
    int32_t* in = out->inputs.data() + i * static_cast<size_t>(contextLength);
    std::copy(window, window + contextLength, in);
    shiftTargets(in, out->targets.data() + i * static_cast<size_t>(contextLength), contextLength, window[contextLength]);
  }
  return Status::ok();
}

Result<TokenSplit> splitTokens(std::vector<int32_t> tokens, double valFraction, int contextLength) {
  if (!(valFraction >= 0 && valFraction < 1)) {
    return invalidArgument("valFraction " + std::to_string(valFraction) + " is not in [0, 1)");
  }
  if (contextLength < 1) return invalidArgument("contextLength " + std::to_string(contextLength) + " must be >= 1");
  const int64_t total = static_cast<int64_t>(tokens.size());
  const int64_t window = int64_t{contextLength} + 1;
  const int64_t valCount = tokens::valTokenCount(total, valFraction);
  const int64_t trainCount = total - valCount;
  auto tooShort = [&](const char* part, int64_t n) {
    return invalidArgument("the " + std::string(part) + " part of " + std::to_string(total) + " tokens (valFraction " +
                           std::to_string(valFraction) + ") holds " + std::to_string(n) +
                           " tokens, fewer than one window of " + std::to_string(window) + " (contextLength + 1)");
  };
  if (trainCount < window) return tooShort("training", trainCount);
  if (valFraction > 0 && valCount < window) return tooShort("validation", valCount);
  TokenSplit split;
  split.val.assign(tokens.begin() + trainCount, tokens.end());
  tokens.resize(static_cast<size_t>(trainCount));
  split.train = std::move(tokens);
  return split;
}

}  // namespace ddp::data
