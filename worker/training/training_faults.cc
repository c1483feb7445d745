#include "worker/training/training_faults.h"

#include <cstdio>
#include <string>

namespace ddp::runtime {

TrainingFaults& TrainingFaults::stopDuring(int64_t step) {
  stopStep_ = step;
  return *this;
}

TrainingFaults& TrainingFaults::stallBefore(int64_t step, double seconds) {
  stallStep_ = step;
  stallSeconds_ = seconds;
  return *this;
}

TrainingFaults& TrainingFaults::failShardWrite(int64_t step) {
  failStep_ = step;
  return *this;
}

TrainingFaults& TrainingFaults::delayShardWrite(int64_t step, double seconds) {
  delayStep_ = step;
  delaySeconds_ = seconds;
  return *this;
}

bool TrainingFaults::stopRequestedDuring(int64_t step) const { return stopStep_ >= 0 && step >= stopStep_; }

std::optional<double> TrainingFaults::stallBeforeStep(int64_t step) const {
  if (stallStep_ < 0 || step != stallStep_) return std::nullopt;
  return stallSeconds_;
}

ShardWriteFault TrainingFaults::shardWrite(int64_t step) const {
  ShardWriteFault f;
  f.fail = step == failStep_;
  if (step == delayStep_ && delaySeconds_ > 0) f.delaySeconds = delaySeconds_;
  return f;
}

bool TrainingFaults::none() const { return stopStep_ < 0 && stallStep_ < 0 && failStep_ < 0 && delayStep_ < 0; }

namespace {

constexpr const char* kStallVar = "DDP_TEST_STALL";
constexpr const char* kCheckpointFaultVar = "DDP_TEST_CHECKPOINT_FAULT";

Status malformed(const char* var, const std::string& value, const char* format) {
  return invalidArgument(std::string(var) + "=" + value + ": expected " + format);
}

struct StallSpec {
  int rank = -1;
  int64_t step = -1;
  double seconds = 0;
};

struct CheckpointFaultSpec {
  int rank = -1;
  int64_t step = -1;
  bool fail = false;       // else a delay
  double delaySeconds = 0;
};

Result<std::optional<StallSpec>> parseStall(const EnvLookup& env) {
  const std::optional<std::string> value = env(kStallVar);
  if (!value || value->empty()) return std::optional<StallSpec>();
  StallSpec s;
  long long step = -1;
  if (std::sscanf(value->c_str(), "%d:%lld:%lf", &s.rank, &step, &s.seconds) != 3) {
    return malformed(kStallVar, *value, "RANK:STEP:SECONDS");
  }
  s.step = step;
  return std::optional<StallSpec>(s);
}

Result<std::optional<CheckpointFaultSpec>> parseCheckpointFault(const EnvLookup& env) {
  const std::optional<std::string> value = env(kCheckpointFaultVar);
  if (!value || value->empty()) return std::optional<CheckpointFaultSpec>();
  CheckpointFaultSpec c;
  long long step = -1;
  char kind[8] = {0};
  const int n = std::sscanf(value->c_str(), "%d:%lld:%7[a-z]:%lf", &c.rank, &step, kind, &c.delaySeconds);
  const std::string k = n >= 3 ? kind : "";
  if (k != "fail" && !(k == "delay" && n == 4)) {
    return malformed(kCheckpointFaultVar, *value, "RANK:STEP:fail or RANK:STEP:delay:SECONDS");
  }
  c.step = step;
  c.fail = k == "fail";
  return std::optional<CheckpointFaultSpec>(c);
}

}  // namespace

Result<TrainingFaults> trainingFaultsFromEnv(const EnvLookup& env, int rank, int64_t generation) {
  DDP_ASSIGN_OR_RETURN(std::optional<StallSpec> stall, parseStall(env));
  DDP_ASSIGN_OR_RETURN(std::optional<CheckpointFaultSpec> checkpoint, parseCheckpointFault(env));
  TrainingFaults out;
  if (generation != 1) return out;  // Note [Injected faults]: the first generation only
  if (stall && stall->rank == rank) out.stallBefore(stall->step, stall->seconds);
  if (checkpoint && checkpoint->rank == rank) {
    if (checkpoint->fail) {
      out.failShardWrite(checkpoint->step);
    } else {
      out.delayShardWrite(checkpoint->step, checkpoint->delaySeconds);
    }
  }
  return out;
}

}  // namespace ddp::runtime
