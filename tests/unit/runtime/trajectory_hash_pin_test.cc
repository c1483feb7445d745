// trajectoryHash() is stored in every checkpoint (checkpoint_format.h: specHash) and a resume
// refuses a checkpoint whose hash differs from the job's. Whatever computes it, the value for
// each shipped example and for the jobs the fault and integration tests run stays what it was
// when checkpoints were first written with it: pinned here, so a refactor of the spec or the
// trainer's configuration that changes one is caught before existing checkpoints stop resuming.
// Oracle: the values the code computed at commit 471bca2, before the field table replaced the
// spec code.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/training/trainer_config.h"

namespace ddp::runtime {
namespace {

// The hash leaves out the device (Note [Trajectory hash]): a cuda job is adapted as a cpu one, so
// the pin holds in a build without CUDA, where the adapter refuses cuda.
uint64_t hashOf(JobSpec spec) {
  spec.device = JobDevice::kCpu;
  auto c = trainerConfigFromJobSpec(spec);
  EXPECT_TRUE(c.isOk()) << c.status();
  return c.isOk() ? trajectoryHash(*c) : 0;
}

std::string hex(uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, h);
  return buf;
}

TEST(TrajectoryHashPinTest, ShippedExamplesKeepTheirHash) {
  const std::vector<std::pair<std::string, uint64_t>> pinned = {
      {"examples/fashion-mnist.yaml", 0xe908f6640cdf5bd2ULL},
      {"examples/fashion-mnist-bf16.yaml", 0x9bb9a3ec920b8710ULL},
      {"examples/fashion-mnist-cnn.yaml", 0xf295529bdb9b995cULL},
      {"examples/gpt-fortunes.yaml", 0x663dc7939ae2fc24ULL},  // pinned when the trainer first trained gpt
      {"examples/join.yaml", 0x7e825cff3cfb3d47ULL},
      {"examples/powersgd.yaml", 0xd48046541f255db5ULL},
      {"examples/synthetic.yaml", 0x8fd1347519350eabULL},
      {"examples/zero.yaml", 0x95f3bd4a51b9b7b0ULL},
      {"manifests/examples/ddpjob-cpu.yaml", 0xe908f6640cdf5bd2ULL},
      {"manifests/examples/ddpjob-gpu.yaml", 0xf842cde368b41084ULL},
  };
  for (const auto& [file, want] : pinned) {
    auto spec = loadJobSpecFile(std::string(DDP_SOURCE_DIR) + "/" + file);
    ASSERT_TRUE(spec.isOk()) << file << ": " << spec.status();
    EXPECT_EQ(hex(hashOf(*spec)), hex(want)) << file;
  }
}

// The jobs of the fault tests (tests/fault/fault_harness.h faultJobYaml, with its variants) and
// of the elastic and recovery tests: their checkpoints are written and resumed within a run,
// but a changed hash means the same job no longer resumes a checkpoint of the same job.
TEST(TrajectoryHashPinTest, TestJobsKeepTheirHash) {
  auto fault = [](const std::string& workers, const std::string& extra) {
    return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: f\nspec:\n"
      "  workers: {" + workers + "}\n"
      "  model:\n    type: mlp\n    hidden: [32]\n"
      "  data:\n    dataset: synthetic\n    batchSize: 16\n"
      "    synthetic:\n      samples: 4096\n      features: 32\n      classes: 4\n"
      "  optimizer:\n    type: sgd\n    lr: 0.05\n    momentum: 0.9\n"
      "  steps: 120\n  seed: 11\n  maxRestarts: 0\n"
      "  checkpoint:\n    dir: /tmp/ckpt\n    everySteps: 20\n    keep: 2\n" + extra;
  };
  const std::vector<std::pair<std::string, uint64_t>> pinned = {
      {fault("count: 2", ""), 0xfc472f251859678cULL},
      {fault("count: 2", "  zero: zero1\n"), 0x4b4544ed2b6e7fcdULL},
      {fault("count: 2", "  commHook: {type: powerSGD, powerSGD: {rank: 2, startIter: 10}}\n"), 0xbc576533982d5da7ULL},
      {fault("count: 2, min: 1, max: 4", "  elastic: {keepGlobalBatch: false}\n"), 0xfc472f251859678cULL},
      {fault("count: 2", "  gradientAccumulation: {steps: 2}\n  mixedPrecision: bf16\n"), 0xc475a16889351655ULL},
  };
  for (const auto& [yaml, want] : pinned) {
    auto spec = parseJobSpec(yaml);
    ASSERT_TRUE(spec.isOk()) << spec.status();
    EXPECT_EQ(hex(hashOf(*spec)), hex(want)) << yaml;
  }
}

}  // namespace
}  // namespace ddp::runtime
