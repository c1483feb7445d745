#pragma once
// Where a job may point its workers (Note [Allowed path roots] in path_policy.cc): the paths a
// spec names (spec.checkpoint.dir now) must be absolute and lie under one of the operator's
// allowed roots, and never inside the controller's own state directory (except a root the
// operator put there, as the default STATE_DIR/checkpoints).
// Thread model: a plain value; check() reads the filesystem (symbolic links of the existing part
// of a path are followed) and is safe from any thread.

#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::controller {

class PathPolicy {
 public:
  PathPolicy() : roots_{"/"} {}  // every absolute path (JobManager's default; Controller sets the real one)
  PathPolicy(std::vector<std::string> allowedRoots, std::string stateDir);

  // InvalidArgument "FIELD: why" when `path` may not be used; OK for an empty path (unset).
  Status check(const std::string& field, const std::string& path) const;
  const std::vector<std::string>& roots() const { return roots_; }

 private:
  std::vector<std::string> roots_;  // canonical
  std::string stateDir_;            // canonical
};

// The default roots: STATE_DIR/checkpoints and the system's temporary folder ($TMPDIR or /tmp).
std::vector<std::string> defaultPathRoots(const std::string& stateDir, const char* tmpdir);

}  // namespace ddp::controller
