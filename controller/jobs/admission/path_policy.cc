#include "controller/jobs/admission/path_policy.h"

#include <filesystem>
#include <system_error>

// Note [Allowed path roots]
// Local workers run as the controller's user, so a job naming `checkpoint.dir: /etc` (or `/`, a
// relative path resolved against the worker's working directory, or the controller's own state
// dir with its job table and token) had the controller's user write there. The controller takes
// the roots a job's paths may lie under (--allowed-path-roots; the chart's
// controller.allowedPathRoots; default STATE_DIR/checkpoints and the temporary folder) and refuses
// the rest at submission, naming the field. A path is compared after resolving `..` and the
// symbolic links of its existing part, so neither escapes a root. `ddpctl run` runs the user's
// own job on the user's machine: it allows every directory but its embedded controller's state
// dir, and makes a relative path absolute against the current directory first.

namespace ddp::controller {
namespace {

std::string canonical(const std::string& p) {
  std::error_code ec;
  std::filesystem::path c = std::filesystem::weakly_canonical(p, ec);
  if (ec) c = std::filesystem::path(p).lexically_normal();
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

}  // namespace

PathPolicy::PathPolicy(std::vector<std::string> allowedRoots, std::string stateDir)
    : stateDir_(stateDir.empty() ? "" : canonical(stateDir)) {
  for (const auto& r : allowedRoots) roots_.push_back(canonical(r));
}

Status PathPolicy::check(const std::string& field, const std::string& path) const {
  if (path.empty()) return Status::ok();
  if (path.front() != '/') {
    return invalidArgument(field + ": '" + path +
                           "' is not an absolute path (a worker's working directory is not yours: name the "
                           "directory from /)");
  }
  const std::string c = canonical(path);
  bool allowed = false;
  for (const auto& root : roots_) {
    if (!under(c, root)) continue;
    // Inside the state dir only through a root the operator put there (STATE_DIR/checkpoints).
    if (!stateDir_.empty() && under(c, stateDir_) && !under(root, stateDir_)) continue;
    allowed = true;
    break;
  }
  if (allowed) return Status::ok();
  if (!stateDir_.empty() && under(c, stateDir_)) {
    return invalidArgument(field + ": " + path + " is inside the controller's state directory " + stateDir_ +
                           " (its job table and token): use another directory");
  }
  std::string list;
  for (const auto& r : roots_) list += (list.empty() ? "" : ", ") + r;
  return invalidArgument(field + ": " + path + (c != path ? " (" + c + ")" : "") +
                         " is outside the directories jobs may use (" + (list.empty() ? "none" : list) +
                         "): use one of them, or ask the operator to allow it (--allowed-path-roots)");
}

std::vector<std::string> defaultPathRoots(const std::string& stateDir, const char* tmpdir) {
  return {stateDir + "/checkpoints", tmpdir != nullptr && tmpdir[0] == '/' ? tmpdir : "/tmp"};
}

}  // namespace ddp::controller
