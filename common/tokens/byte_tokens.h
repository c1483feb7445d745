#pragma once
// Text as bytes: the simplest tokenizer, one token per byte (vocabulary 256), for small text
// corpora (`ddpctl tokenize --bytes`, the text dataset). No normalisation: the bytes of the files
// as they are, concatenated in the order given.
// Thread model: free functions, no shared state.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::tokens {

inline constexpr int64_t kByteVocabSize = 256;

// The bytes of `files`, concatenated in order, as tokens in [0, 256). Reads each file whole.
// NotFound / PermissionDenied / InvalidArgument (a directory) / Unavailable naming the file that
// cannot be read.
Result<std::vector<int32_t>> bytesToTokens(const std::vector<std::string>& files);

// How many of `total` tokens a validation fraction in [0, 1) sends to validation: the last
// floor(total * fraction) of them (the training part is the first total - that).
int64_t valTokenCount(int64_t total, double fraction);

}  // namespace ddp::tokens
