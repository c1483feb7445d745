#pragma once
// OptimizerState: the world-size-independent saved state of an elementwise optimizer, keyed by
// the parameter's position in the model's parameter list. A plain Optimizer saves every
// parameter; a ZeroRedundancyOptimizer rank saves its shard; shards merge into the full state
// and the full state loads at any world size (Note [Resharding] in zero_redundancy_optimizer.h).
//
// Encoding: writeFramed(kOptimizerStateMagic, 1, payload) from common/binary_io.h, payload =
//   kind u8, lr f32, weightDecay f32, momentum f32, dampening f32, nesterov u8, beta1 f32,
//   beta2 f32, eps f32, count u64, then per record: index u64, name string, numel u64,
//   step i64, slots u32, then each slot as a float vector.
// Thread model: plain values.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/optim/optimizer_config.h"

namespace ddp::optim {

inline constexpr uint32_t kOptimizerStateMagic = 0x5453504f;  // "OPST"

// Per-parameter state: `step` updates taken (0 = never stepped) and `slots` state tensors of
// numel elements each (SGD: momentum buffer; Adam: exp_avg, exp_avg_sq).
struct ParamState {
  int64_t step = 0;
  std::vector<std::vector<float>> slots;
  bool operator==(const ParamState&) const = default;
};

struct ParamRecord {
  uint64_t index = 0;  // position in the model's parameter list
  std::string name;
  uint64_t numel = 0;
  ParamState state;
};

struct OptimizerState {
  OptimizerConfig config;
  std::vector<ParamRecord> params;  // sorted by index after decode / merge

  std::string encode() const;
  static Result<OptimizerState> decode(std::string_view frame, const std::string& what = "optimizer state");
  // Merges shards (same optimizer kind; disjoint indices) into one state sorted by index.
  // Hyperparameters come from the first shard.
  static Result<OptimizerState> merge(std::vector<OptimizerState> shards);
};

}  // namespace ddp::optim
