#pragma once
// The GPT job of the fault tests: a token file of a learnable sequence (next = (5 prev + 3) mod
// 16, one token in eight drawn at random) and a tiny GPT job spec over it with the fault-test
// timeouts (heartbeat 1 s x 3, hang 5 s), for the recovery (gpt_recovery_fault_test.cc) and
// elastic (gpt_elastic_fault_test.cc) tests.
// Thread model: plain functions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/split_mix_rng.h"
#include "common/status.h"
#include "common/tokens/token_file.h"

namespace ddp::test {

// Writes `count` tokens of the sequence to `path` (uint16).
inline Status writeGptFaultTokens(const std::string& path, size_t count = 20000) {
  std::vector<int32_t> tokens(count);
  SplitMixRng rng(9);
  int32_t prev = 0;
  for (auto& t : tokens) prev = t = rng.next() % 8 == 0 ? static_cast<int32_t>(rng.next() % 16) : (5 * prev + 3) % 16;
  return tokens::writeTokenFile(path, tokens, tokens::TokenDType::kUint16);
}

struct GptFaultJob {
  std::string workers = "count: 2";  // the spec.workers map's fields
  int batchSize = 4;
  int64_t steps = 6000;
  int64_t checkpointEverySteps = 200;
  double dropout = 0.1;
  std::string timeouts = "heartbeatSeconds: 1\n    heartbeatMisses: 3\n    hangSeconds: 5\n"
                         "    collectiveSeconds: 30\n    lastCallSeconds: 1\n";
  std::string extraSpec;  // appended to spec (two-space indented lines)
};

// The job `name` reading DIR/train.bin (writeGptFaultTokens), checkpointing to DIR/ckpt-<name>.
inline std::string gptFaultJobYaml(const std::string& name, const std::string& dir, const GptFaultJob& j = {}) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name + "\nspec:\n"
         "  workers: {" + j.workers + "}\n"
         "  model: {type: gpt, vocabSize: 16, contextLength: 16, layers: 1, heads: 2, dModel: 16, dropout: " +
         std::to_string(j.dropout) + "}\n"
         "  data:\n    dataset: tokens\n    train: {path: " + dir + "/train.bin}\n    valFraction: 0.1\n"
         "    batchSize: " + std::to_string(j.batchSize) + "\n"
         "  optimizer: {type: adamw, lr: 0.003, weightDecay: 0.1, schedule: {type: linear, warmupSteps: 20}}\n"
         "  steps: " + std::to_string(j.steps) + "\n  seed: 21\n  maxRestarts: 3\n"
         "  eval: {everySteps: 2000, limit: 32}\n"
         "  checkpoint:\n    dir: " + dir + "/ckpt-" + name + "\n    everySteps: " +
         std::to_string(j.checkpointEverySteps) + "\n    keep: 2\n"
         "  timeouts:\n    " + j.timeouts + j.extraSpec;
}

}  // namespace ddp::test
