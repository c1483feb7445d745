#pragma once
// Joinable: a component whose per-iteration collectives a Join context can shadow for ranks
// that ran out of inputs (DDP, ZeroRedundancyOptimizer, or a user's own).
//
// Contract: before its per-iteration collectives, a Joinable calls
// Join::notifyJoinContext(*this, deadline) (join.h). Only the first joinable of the Join issues
// the notify collectives; the call is a no-op outside a Join, with enable = false, and for a
// rank already in its shadow loop.
// Thread model: the config is written by Join (create / finish / destruction) on the training
// thread and read by the joinable on the same thread.

#include <map>
#include <memory>
#include <string>

#include "common/dtype.h"
#include "worker/comm/backend.h"
#include "worker/join/join_hook.h"

namespace ddp::join {

class Join;

// Options handed to every joinable's joinHook(): PyTorch's hook kwargs.
struct JoinHookOptions {
  // DDP: divide shadowed gradients by the initial world size (true) or by the number of ranks
  // still active (false).
  bool divideByInitialWorldSize = true;
  // Joinable-specific options by name (a joinable documents the keys it reads).
  std::map<std::string, std::string> extra;
};

// Set by Join on each of its joinables.
struct JoinConfig {
  bool enable = false;
  bool throwOnEarlyTermination = false;
  bool isFirstJoinable = false;
  bool joined = false;  // this rank is in its shadow loop
  const Join* join = nullptr;
};

class Joinable {
 public:
  virtual ~Joinable() = default;
  // Called once, by Join::create(); the joinable may keep options it needs while active.
  virtual std::unique_ptr<JoinHook> joinHook(const JoinHookOptions& options) = 0;
  virtual Device joinDevice() const = 0;
  virtual comm::Backend& joinProcessGroup() = 0;

  const JoinConfig& joinConfig() const { return joinConfig_; }

 private:
  friend class Join;
  JoinConfig joinConfig_;
};

}  // namespace ddp::join
