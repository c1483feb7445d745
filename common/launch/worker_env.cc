#include "common/launch/worker_env.h"

namespace ddp::launch {

std::vector<std::string> workerEnvironment(const WorkerEnv& env) {
  std::vector<std::string> out;
  auto add = [&out](const char* name, const std::string& value) {
    if (!value.empty()) out.push_back(std::string(name) + "=" + value);
  };
  add(kEnvControllerUrl, env.controllerUrl);
  add(kEnvJobName, env.jobName);
  add(kEnvJobToken, env.jobToken);
  add(kEnvWorkerId, env.workerId);
  add(kEnvAdvertiseAddr, env.advertiseAddress);
  add(kEnvLogFormat, env.logFormat);
  add(kEnvLogLevel, env.logLevel);
  add(kEnvCheckpointDir, env.checkpointDir);
  add(kEnvCommThreadPriority, env.commThreadPriority);
  std::string ids;
  for (const std::string& id : env.podWorkerIds) ids += (ids.empty() ? "" : ",") + id;
  add(kEnvPodWorkerIds, ids);
  return out;
}

}  // namespace ddp::launch
