#include "controller/store/job_record.h"

#include <cmath>
#include <utility>

namespace ddp::controller {

namespace {

struct PhaseName {
  JobPhase phase;
  const char* name;
};

constexpr PhaseName kPhaseNames[] = {
    {JobPhase::kPending, "Pending"},     {JobPhase::kRunning, "Running"},
    {JobPhase::kRestarting, "Restarting"}, {JobPhase::kSucceeded, "Succeeded"},
    {JobPhase::kFailed, "Failed"},       {JobPhase::kCancelled, "Cancelled"},
    {JobPhase::kSuspended, "Suspended"},
};

bool sameDouble(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

const char* jobPhaseName(JobPhase phase) {
  for (const PhaseName& p : kPhaseNames) {
    if (p.phase == phase) return p.name;
  }
  return "Unknown";
}

bool parseJobPhase(std::string_view text, JobPhase* out) {
  for (const PhaseName& p : kPhaseNames) {
    if (text == p.name) {
      *out = p.phase;
      return true;
    }
  }
  return false;
}

bool isTerminal(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed ||
         phase == JobPhase::kCancelled;
}

namespace {

bool sameOptional(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || sameDouble(*a, *b));
}

}  // namespace

std::optional<double> JobProgress::perplexity() const {
  if (!valLoss) return std::nullopt;
  return std::exp(*valLoss);
}

bool JobProgress::operator==(const JobProgress& other) const {
  if (!sameOptional(testAccuracy, other.testAccuracy) || !sameOptional(valLoss, other.valLoss) ||
      !sameOptional(tokensPerSecond, other.tokensPerSecond) || !sameOptional(mfu, other.mfu)) {
    return false;
  }
  return step == other.step && totalSteps == other.totalSteps && epoch == other.epoch &&
         epochs == other.epochs && sameDouble(loss, other.loss) &&
         sameDouble(samplesPerSecond, other.samplesPerSecond) &&
         sameDouble(etaSeconds, other.etaSeconds);
}

bool JobRecord::setCondition(const std::string& type, bool status, std::string reason,
                             std::string message, int64_t nowMs) {
  for (JobCondition& c : conditions) {
    if (c.type != type) continue;
    bool changed = c.status != status || c.reason != reason || c.message != message;
    if (c.status != status) {
      c.status = status;
      c.lastTransitionMs = nowMs;
    }
    c.reason = std::move(reason);
    c.message = std::move(message);
    return changed;
  }
  conditions.push_back(JobCondition{type, status, std::move(reason), std::move(message), nowMs});
  return true;
}

const JobCondition* JobRecord::findCondition(std::string_view type) const {
  for (const JobCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace ddp::controller
