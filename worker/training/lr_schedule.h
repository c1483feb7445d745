#pragma once
// LrSchedule: the learning rate of every step (applied by the trainer before each optimizer
// step). A linear warmup from baseLr / warmupSteps to baseLr over the first warmupSteps steps,
// then:
//   constant: baseLr
//   step:     baseLr * gamma^floor((step - warmupSteps) / stepSize)
//   cosine:   minLr + (baseLr - minLr) * (1 + cos(pi * t)) / 2, t = (step - warmupSteps) /
//             (totalSteps - warmupSteps), clamped to [0, 1]
//   linear:   baseLr - (baseLr - minLr) * t, t as for cosine (minLr at the last step)
// Steps count optimizer steps from 0. Pure: the same step always gives the same rate, so a
// resumed run follows the uninterrupted schedule.
// Thread model: plain value.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::runtime {

enum class LrScheduleKind { kConstant, kStep, kCosine, kLinear };
bool parseLrScheduleKind(const std::string& text, LrScheduleKind* out);
const char* lrScheduleKindName(LrScheduleKind kind);

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double baseLr = 1e-3;
  int64_t warmupSteps = 0;
  int64_t stepSize = 1;   // step: decay period in steps
  double gamma = 0.1;     // step: decay factor
  double minLr = 0.0;     // cosine, linear: final rate
  int64_t totalSteps = 0; // cosine, linear: length of the whole run in steps

  Status validate() const;
  double lrAt(int64_t step) const;
};

}  // namespace ddp::runtime
