#pragma once
// Note [Worker commands]
// spec.worker.command runs a program of the job's own instead of ddp-worker (docs/EXTENDING.md).
// Under the local launcher that is code execution as the controller's user by whoever may submit
// a job, so the service refuses it unless its operator lists the programs (or the folders that
// hold them) it may run: --allow-worker-command PATH[:PATH...] (off by default). A program is
// allowed when its canonical path (symbolic links followed) is a listed file or lies under a
// listed folder; it must exist and be executable at submission. `ddpctl run` allows any (the
// user runs their own code on their own machine), as does a launcher that runs no program on
// the controller's host (Kubernetes: the pod runs it in the job's image; external).
// Thread model: a plain value; check() reads the filesystem and is safe from any thread.

#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::controller {

// The controller flag that allows worker commands (named in every refusal).
inline constexpr const char* kAllowWorkerCommandFlag = "--allow-worker-command";

class WorkerCommandPolicy {
 public:
  WorkerCommandPolicy() = default;  // refuses every command
  // Programs (files) or folders, absolute; canonicalised here (one that does not exist is kept
  // as written and matches nothing that exists elsewhere).
  explicit WorkerCommandPolicy(const std::vector<std::string>& allowed);
  static WorkerCommandPolicy allowAny();

  // OK for an empty command (ddp-worker); else InvalidArgument "spec.worker.command...: why".
  Status check(const std::vector<std::string>& command) const;
  bool allowsAny() const { return any_; }

 private:
  bool any_ = false;
  std::vector<std::string> allowed_;  // canonical
};

}  // namespace ddp::controller
