#pragma once
// Validates Kubernetes objects offline against the Kubernetes OpenAPI schemas with the npm
// package kubernetes-models (tests/kubernetes/validate_objects.mjs), installed by
// scripts/k8s_tools.sh; shared by the launcher's tests.
// Thread model: one test's thread; blocks while node runs (bounded by the tools' own timeouts).

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"

namespace ddp::controller::kube::testing {

// Runs `cmd` through the shell; its exit status and output (stdout and stderr).
inline std::pair<int, std::string> runCommand(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while (p && (n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = p ? ::pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

struct ModelsReport {
  bool skipped = false;  // the tools are missing and npm is unreachable: `text` says why
  int rc = 0;            // validate_objects.mjs's exit status (0: all valid)
  std::string text;      // its report ("N objects valid, M invalid", one line per object)
};

// Writes `objects` to a multi-document file and validates every one.
inline ModelsReport validateWithKubernetesModels(const std::vector<nlohmann::json>& objects) {
  auto [rc, tools] = runCommand(DDP_SOURCE_DIR "/scripts/k8s_tools.sh");
  if (rc == 77) return {true, rc, tools};
  if (rc != 0) return {false, rc, tools};
  while (!tools.empty() && tools.back() == '\n') tools.pop_back();
  tools = tools.substr(tools.rfind('\n') + 1);
  ddp::test::TempDir dir;
  const std::string file = dir.path() + "/objects.yaml";
  {
    std::ofstream out(file);
    for (const nlohmann::json& o : objects) out << o.dump() << "\n---\n";
  }
  auto [vrc, report] = runCommand("DDP_K8S_MODULES=" + tools + "/node_modules node " DDP_SOURCE_DIR
                                  "/tests/kubernetes/validate_objects.mjs " + file);
  return {false, vrc, report};
}

}  // namespace ddp::controller::kube::testing
