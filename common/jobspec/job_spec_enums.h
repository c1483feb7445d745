#pragma once
// The YAML spellings of the JobSpec enumerations, one table per enum: the field table binds
// each enum field to its table, and the *Name() functions (job_spec.h) read them.
// Thread model: immutable data.

#include <string>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace ddp {

template <typename E>
using EnumTable = std::vector<std::pair<std::string, E>>;

inline const EnumTable<JobDevice> kJobDeviceNames = {{"cpu", JobDevice::kCpu}, {"cuda", JobDevice::kCuda}};
inline const EnumTable<ModelType> kModelTypeNames = {
    {"mlp", ModelType::kMlp}, {"cnn", ModelType::kCnn}, {"gpt", ModelType::kGpt}, {"sequential", ModelType::kSequential}};
inline const EnumTable<LossType> kLossNames = {{"crossEntropy", LossType::kCrossEntropy}, {"mse", LossType::kMse}};
inline const EnumTable<DatasetKind> kDatasetNames = {{"fashion-mnist", DatasetKind::kFashionMnist},
                                                     {"synthetic", DatasetKind::kSynthetic},
                                                     {"tokens", DatasetKind::kTokens},
                                                     {"text", DatasetKind::kText},
                                                     {"idx", DatasetKind::kIdx},
                                                     {"npy", DatasetKind::kNpy},
                                                     {"csv", DatasetKind::kCsv}};
inline const EnumTable<OptimizerType> kOptimizerNames = {
    {"sgd", OptimizerType::kSgd}, {"adam", OptimizerType::kAdam}, {"adamw", OptimizerType::kAdamW}};
inline const EnumTable<ScheduleType> kScheduleNames = {
    {"constant", ScheduleType::kConstant}, {"step", ScheduleType::kStep}, {"cosine", ScheduleType::kCosine},
    {"linear", ScheduleType::kLinear}};
inline const EnumTable<GptNorm> kGptNormNames = {{"layernorm", GptNorm::kLayerNorm}, {"rmsnorm", GptNorm::kRmsNorm}};
inline const EnumTable<GptPositions> kGptPositionsNames = {{"learned", GptPositions::kLearned},
                                                           {"rope", GptPositions::kRope}};
inline const EnumTable<WeightDecayOn> kWeightDecayOnNames = {{"all", WeightDecayOn::kAll},
                                                             {"linearWeights", WeightDecayOn::kLinearWeights}};
inline const EnumTable<ComputePrecision> kComputePrecisionNames = {{"fp32", ComputePrecision::kFp32},
                                                                   {"bf16", ComputePrecision::kBf16}};
inline const EnumTable<ZeroMode> kZeroNames = {
    {"none", ZeroMode::kNone}, {"zero1", ZeroMode::kZero1}, {"dfa", ZeroMode::kDfa}};
inline const EnumTable<CommHookType> kCommHookNames = {{"allreduce", CommHookType::kAllreduce},
                                                       {"fp16", CommHookType::kFp16},
                                                       {"bf16", CommHookType::kBf16},
                                                       {"powerSGD", CommHookType::kPowerSgd},
                                                       {"batchedPowerSGD", CommHookType::kBatchedPowerSgd},
                                                       {"noop", CommHookType::kNoop}};
inline const EnumTable<HookWrapper> kHookWrapperNames = {
    {"none", HookWrapper::kNone}, {"fp16", HookWrapper::kFp16}, {"bf16", HookWrapper::kBf16}};
inline const EnumTable<MixedPrecision> kMixedPrecisionNames = {
    {"none", MixedPrecision::kNone}, {"fp16", MixedPrecision::kFp16}, {"bf16", MixedPrecision::kBf16}};
inline const EnumTable<JobLogFormat> kLogFormatNames = {{"text", JobLogFormat::kText}, {"json", JobLogFormat::kJson}};
inline const EnumTable<CommThreadPriority> kCommThreadPriorityNames = {{"auto", CommThreadPriority::kAuto},
                                                                       {"realtime", CommThreadPriority::kRealtime},
                                                                       {"normal", CommThreadPriority::kNormal}};
inline const EnumTable<ImagePullPolicy> kImagePullPolicyNames = {{"IfNotPresent", ImagePullPolicy::kIfNotPresent},
                                                                 {"Always", ImagePullPolicy::kAlways},
                                                                 {"Never", ImagePullPolicy::kNever}};
inline const EnumTable<CleanPodPolicy> kCleanPodPolicyNames = {
    {"Running", CleanPodPolicy::kRunning}, {"All", CleanPodPolicy::kAll}, {"None", CleanPodPolicy::kNone}};
inline const EnumTable<ScheduleTimeoutAction> kScheduleTimeoutActionNames = {{"Fail", ScheduleTimeoutAction::kFail},
                                                                             {"Retry", ScheduleTimeoutAction::kRetry}};

// The spelling of `v` in `table` ("?" when it has none).
template <typename E>
const char* enumName(const EnumTable<E>& table, E v) {
  for (const auto& [name, value] : table) {
    if (value == v) return name.c_str();
  }
  return "?";
}

}  // namespace ddp
