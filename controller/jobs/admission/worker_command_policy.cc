#include "controller/jobs/admission/worker_command_policy.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::controller {
namespace {

std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

// `path` equals `root` or lies under it (both canonical).
bool within(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

}  // namespace

WorkerCommandPolicy::WorkerCommandPolicy(const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) allowed_.push_back(canonical(a));
}

WorkerCommandPolicy WorkerCommandPolicy::allowAny() {
  WorkerCommandPolicy p;
  p.any_ = true;
  return p;
}

Status WorkerCommandPolicy::check(const std::vector<std::string>& command) const {
  if (command.empty() || any_) return Status::ok();
  const std::string field = "spec.worker.command[0]";
  const std::string how = std::string(" (the operator allows programs or folders with ddp-controller's ") +
                          kAllowWorkerCommandFlag + " PATH[:PATH...] / DDP_CONTROLLER_ALLOW_WORKER_COMMAND)";
  if (allowed_.empty()) {
    return invalidArgument("spec.worker.command: this controller runs no worker program of a job's own" + how);
  }
  const std::string& program = command[0];
  if (program.empty() || program[0] != '/') {
    return invalidArgument(field + ": '" + program + "' must be an absolute path under the local launcher");
  }
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0) return invalidArgument(field + ": " + program + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) {
    return invalidArgument(field + ": " + program + " is not an executable file");
  }
  const std::string real = canonical(program);
  for (const std::string& a : allowed_) {
    if (within(real, a)) return Status::ok();
  }
  return invalidArgument(field + ": " + program + (real != program ? " (" + real + ")" : "") +
                         " is not among the programs this controller may run" + how);
}

}  // namespace ddp::controller
