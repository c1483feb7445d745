#pragma once
// TrainerState: the run's position, saved in every checkpoint (the "trainer" section) and in a
// peer's state (Note [Healing from live peers]).
// Thread model: plain value.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp::runtime {

struct TrainerState {
  int64_t step = 0;   // optimizer steps done
  int32_t epoch = 0;  // 0-based epoch in progress (== epochs when finished)
  uint64_t seed = 0;
  int32_t worldSize = 1;
  int32_t batchSize = 0;   // spec.data.batchSize (per worker at the nominal world size)
  // Where the LR schedule is (Note [Elastic batch]): optimizer steps at the nominal global batch.
  // == step unless the world size changed with keepGlobalBatch false. Version 2.
  double scheduleStep = 0;

  // Framed (magic "TSRT", version 2). decode() reads version 1 too (scheduleStep = step).
  std::string encode() const;
  static Result<TrainerState> decode(std::string_view frame);
};

}  // namespace ddp::runtime
