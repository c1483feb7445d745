#pragma once
// Jobs trained by `ddpctl run` for the tests of export, predict and generate, and the
// independent numpy reader they check against (tests/integration/safetensors_numpy.py).
// Header-only; used by tests/integration only. Thread model: the test's thread.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"

namespace ddp::test {

inline const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
inline const std::string kPython = "/usr/bin/python3";
inline const std::string kScript = std::string(DDP_SOURCE_DIR) + "/tests/integration/safetensors_numpy.py";

inline bool numpyAvailable() { return runCli({kPython, "-c", "import numpy"}, 30).exitCode == 0; }

inline std::string header(const std::string& name) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name + "}\nspec:\n";
}

// Trains `body` with `ddpctl run`, checkpointing into dir/ckpt; returns the checkpoint directory.
inline std::string train(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::string ckpt = dir.path() + "/ckpt";
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << header(name) << body << "  checkpoint: {dir: " << ckpt << ", everySteps: 4}\n";
  auto r = runCli({kDdpctl, "run", path}, 300);
  EXPECT_EQ(r.exitCode, 0) << r.err << r.out;
  return ckpt;
}

}  // namespace ddp::test
