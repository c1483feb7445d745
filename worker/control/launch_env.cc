#include "worker/control/launch_env.h"

#include <string>

#include "common/launch/worker_env.h"

namespace ddp::runtime {

Result<std::optional<CommThreadPriority>> operatorCommPriority(const EnvLookup& env) {
  const std::optional<std::string> v = env(launch::kEnvCommThreadPriority);
  if (!v || v->empty()) return std::optional<CommThreadPriority>();
  auto p = parseCommThreadPriority(*v);
  if (!p.isOk()) return invalidArgument(std::string(launch::kEnvCommThreadPriority) + ": " + p.status().message());
  return std::optional<CommThreadPriority>(*p);
}

std::optional<CommThreadPriority> workerCommPriority(const JobSpec& spec, int workers, int cores,
                                                     std::optional<CommThreadPriority> operatorChoice) {
  if (operatorChoice) return operatorChoice;
  if (spec.commThreadPriority != CommThreadPriority::kAuto) return std::nullopt;  // the job chose
  if (static_cast<long>(workers) * spec.threadsPerWorker <= cores) return std::nullopt;
  return CommThreadPriority::kNormal;
}

}  // namespace ddp::runtime
