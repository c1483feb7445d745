#include "worker/training/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ddp::runtime {

bool parseLrScheduleKind(const std::string& t, LrScheduleKind* out) {
  if (t == "constant" || t == "none") *out = LrScheduleKind::kConstant;
  else if (t == "step") *out = LrScheduleKind::kStep;
  else if (t == "cosine") *out = LrScheduleKind::kCosine;
  else if (t == "linear") *out = LrScheduleKind::kLinear;
  else return false;
  return true;
}

const char* lrScheduleKindName(LrScheduleKind k) {
  switch (k) {
    case LrScheduleKind::kConstant: return "constant";
    case LrScheduleKind::kStep: return "step";
    case LrScheduleKind::kCosine: return "cosine";
    case LrScheduleKind::kLinear: return "linear";
  }
  return "?";
}

Status LrSchedule::validate() const {
  if (!(baseLr >= 0)) return invalidArgument("lr must be >= 0");
  if (warmupSteps < 0) return invalidArgument("warmup steps must be >= 0");
  if (kind == LrScheduleKind::kStep) {
    if (stepSize <= 0) return invalidArgument("step schedule: step size must be >= 1");
    if (!(gamma > 0)) return invalidArgument("step schedule: gamma must be > 0");
  }
  if ((kind == LrScheduleKind::kCosine || kind == LrScheduleKind::kLinear) && !(minLr >= 0 && minLr <= baseLr)) {
    return invalidArgument(std::string(lrScheduleKindName(kind)) + " schedule: min lr must be in [0, lr]");
  }
  return Status::ok();
}

double LrSchedule::lrAt(int64_t step) const {
  if (step < warmupSteps) {
    return baseLr * static_cast<double>(step + 1) / static_cast<double>(warmupSteps);
  }
  const int64_t s = step - warmupSteps;
  switch (kind) {
    case LrScheduleKind::kConstant:
      return baseLr;
    case LrScheduleKind::kStep:
      return baseLr * std::pow(gamma, static_cast<double>(s / stepSize));
    case LrScheduleKind::kCosine:
    case LrScheduleKind::kLinear: {
      const int64_t span = totalSteps - warmupSteps;
      if (span <= 0) return minLr;
      const double t = std::clamp(static_cast<double>(s) / static_cast<double>(span), 0.0, 1.0);
      if (kind == LrScheduleKind::kLinear) return baseLr - (baseLr - minLr) * t;
      return minLr + (baseLr - minLr) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
    }
  }
  return baseLr;
}

}  // namespace ddp::runtime
