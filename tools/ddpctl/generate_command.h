#pragma once
// `ddpctl generate (JOB | --checkpoint-dir DIR) (--prompt TEXT | --prompt-tokens 1,2,3)
// [--tokens N] [--temperature T] [--top-k K] [--seed S] [--step N]`: samples a continuation from
// a checkpoint's GPT on this machine's CPU (docs/MODELS.md, "Predict and generate"). --prompt
// takes text for a model trained on text as bytes; --prompt-tokens takes token ids. Each new
// token is drawn from the softmax of the last position's logits / T over the K likeliest tokens
// (K 0: all; T 0 or K 1: the likeliest, greedy), with a SplitMix stream from the seed: the same
// seed gives the same text. The context is the last contextLength tokens.
// Thread model: runs on the calling thread.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/split_mix_rng.h"

namespace ddp::ddpctl {

std::string generateUsage();
// Exit status: 0 generated, 1 failed, 2 bad arguments (an out-of-vocabulary prompt token too).
int generateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The next token from one position's `logits` (vocab values): temperature 0 or topK 1 is the
// argmax (the lowest id among ties); else a draw from the softmax of logits / temperature over
// the topK largest (topK 0: every token).
int32_t sampleToken(const std::vector<float>& logits, double temperature, int topK, SplitMixRng& rng);

}  // namespace ddp::ddpctl
