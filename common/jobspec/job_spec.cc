// JobSpec enum spellings, SpecError and the error list as a Status. (Parsing:
// job_spec_yaml.cc; validation: job_spec_validate.cc; toYaml: job_spec_emit.cc; files:
// job_spec_file.cc.)
#include "common/jobspec/job_spec.h"

#include <sstream>

namespace ddp {

const char* jobDeviceName(JobDevice v) { return v == JobDevice::kCuda ? "cuda" : "cpu"; }
const char* modelTypeName(ModelType v) { return v == ModelType::kCnn ? "cnn" : "mlp"; }
const char* datasetKindName(DatasetKind v) {
  return v == DatasetKind::kSynthetic ? "synthetic" : "fashion-mnist";
}
const char* optimizerTypeName(OptimizerType v) {
  switch (v) {
    case OptimizerType::kSgd: return "sgd";
    case OptimizerType::kAdam: return "adam";
    case OptimizerType::kAdamW: return "adamw";
  }
  return "?";
}
const char* scheduleTypeName(ScheduleType v) {
  switch (v) {
    case ScheduleType::kConstant: return "constant";
    case ScheduleType::kStep: return "step";
    case ScheduleType::kCosine: return "cosine";
  }
  return "?";
}
const char* zeroModeName(ZeroMode v) {
  switch (v) {
    case ZeroMode::kNone: return "none";
    case ZeroMode::kZero1: return "zero1";
    case ZeroMode::kDfa: return "dfa";
  }
  return "?";
}
const char* commHookTypeName(CommHookType v) {
  switch (v) {
    case CommHookType::kAllreduce: return "allreduce";
    case CommHookType::kFp16: return "fp16";
    case CommHookType::kBf16: return "bf16";
    case CommHookType::kPowerSgd: return "powerSGD";
    case CommHookType::kBatchedPowerSgd: return "batchedPowerSGD";
    case CommHookType::kNoop: return "noop";
  }
  return "?";
}
const char* hookWrapperName(HookWrapper v) {
  switch (v) {
    case HookWrapper::kNone: return "none";
    case HookWrapper::kFp16: return "fp16";
    case HookWrapper::kBf16: return "bf16";
  }
  return "?";
}
const char* mixedPrecisionName(MixedPrecision v) {
  switch (v) {
    case MixedPrecision::kNone: return "none";
    case MixedPrecision::kFp16: return "fp16";
    case MixedPrecision::kBf16: return "bf16";
  }
  return "?";
}
const char* jobLogFormatName(JobLogFormat v) { return v == JobLogFormat::kJson ? "json" : "text"; }

std::string SpecError::toString() const {
  std::ostringstream os;
  os << (path.empty() ? "(document)" : path);
  if (line > 0) os << " (line " << line << ", column " << column << ")";
  os << ": " << message;
  return os.str();
}

Status specErrorsToStatus(const std::vector<SpecError>& errors) {
  if (errors.empty()) return Status::ok();
  std::ostringstream os;
  os << "invalid DDPJob: " << errors.size() << (errors.size() == 1 ? " error:" : " errors:");
  for (const SpecError& e : errors) os << "\n  " << e.toString();
  return invalidArgument(os.str());
}

}  // namespace ddp
