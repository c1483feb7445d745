#include "worker/runtime/launch_env.h"

#include <sched.h>

#include <cstdlib>

namespace ddp::runtime {

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

std::optional<std::string> commPriorityEnvFor(const JobSpec& spec, int workers, int cores) {
  const char* env = std::getenv("DDP_COMM_THREAD_PRIORITY");
  if (env != nullptr && *env != '\0') return std::nullopt;  // the operator chose
  if (spec.commThreadPriority != CommThreadPriority::kAuto) return std::nullopt;  // the job chose
  if (static_cast<long>(workers) * spec.threadsPerWorker <= cores) return std::nullopt;
  return std::string("DDP_COMM_THREAD_PRIORITY=normal");
}

}  // namespace ddp::runtime
