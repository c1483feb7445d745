// JobSpec enum spellings (from job_spec_enums.h), SpecError and the error list as a Status. (Parsing:
// job_spec_yaml.cc; validation: job_spec_validate.cc; toYaml: job_spec_emit.cc; files:
// job_spec_file.cc.)
#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_enums.h"

#include <sstream>

namespace ddp {

const char* jobDeviceName(JobDevice v) { return enumName(kJobDeviceNames, v); }
const char* modelTypeName(ModelType v) { return enumName(kModelTypeNames, v); }
const char* lossTypeName(LossType v) { return enumName(kLossNames, v); }
const char* datasetKindName(DatasetKind v) { return enumName(kDatasetNames, v); }
const char* optimizerTypeName(OptimizerType v) { return enumName(kOptimizerNames, v); }
const char* scheduleTypeName(ScheduleType v) { return enumName(kScheduleNames, v); }
const char* zeroModeName(ZeroMode v) { return enumName(kZeroNames, v); }
const char* commHookTypeName(CommHookType v) { return enumName(kCommHookNames, v); }
const char* hookWrapperName(HookWrapper v) { return enumName(kHookWrapperNames, v); }
const char* mixedPrecisionName(MixedPrecision v) { return enumName(kMixedPrecisionNames, v); }
const char* jobLogFormatName(JobLogFormat v) { return enumName(kLogFormatNames, v); }
const char* gptNormName(GptNorm v) { return enumName(kGptNormNames, v); }
const char* gptPositionsName(GptPositions v) { return enumName(kGptPositionsNames, v); }
const char* weightDecayOnName(WeightDecayOn v) { return enumName(kWeightDecayOnNames, v); }
const char* computePrecisionName(ComputePrecision v) { return enumName(kComputePrecisionNames, v); }

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
