// Accuracy parity through `ddpctl run` (real processes, Gloo over loopback, real Fashion-MNIST
// subset: 20000 training and 5000 test samples, 2 epochs, same seed): every communication,
// mixed-precision (gradients reduced in fp16 / bf16) or optimizer variant, and 1 / 2 / 4
// workers at the same global batch of 128, ends within 0.5 points of test accuracy of the
// 2-worker allreduce baseline.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/cli_process.h"

namespace ddp {
namespace {

const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
constexpr double kMaxGapPoints = 0.5;

std::string job(const std::string& name, int batch, const std::string& extra) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name +
         "}\nspec:\n"
         "  workers: {count: 2}\n"
         "  model: {type: mlp, hidden: [256, 256]}\n"
         "  data: {dataset: fashion-mnist, batchSize: " + std::to_string(batch) + ", limit: 20000}\n"
         "  eval: {limit: 5000}\n"
         "  optimizer: {type: adam, lr: 0.001}\n"
         "  epochs: 2\n"
         "  seed: 1\n" + extra;
}

// Final test accuracy (fraction) of one run.
double runAccuracy(const std::string& name, int workers, int batch, const std::string& extra) {
  const std::string dir = std::filesystem::temp_directory_path() / ("parity_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/job.yaml";
  std::ofstream(path) << job(name, batch, extra);
  auto r = test::runCli({kDdpctl, "run", path, "--workers", std::to_string(workers), "--log-format", "json"}, 180);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  const double acc = test::lastJsonNumber(r, "done", "test_accuracy");
  std::printf("%-10s workers %d  batch/worker %3d  test accuracy %.2f%%  (%.1f s)\n", name.c_str(), workers, batch,
              100 * acc, r.seconds);
  return acc;
}

// One test (ctest runs each TEST in its own process: a shared baseline is run once here).
TEST(AccuracyParityTest, VariantsAndWorkerCountsWithinHalfAPointOfAllreduce) {
  const double base = runAccuracy("allreduce", 2, 64, "");
  ASSERT_GT(base, 0.8);
  struct Variant {
    const char* name;
    int workers;
    int batch;
    const char* extra;
  };
  const Variant variants[] = {
      {"fp16", 2, 64, "  commHook: {type: fp16}\n"},
      {"bf16", 2, 64, "  commHook: {type: bf16}\n"},
      {"mp-fp16", 2, 64, "  mixedPrecision: fp16\n"},
      {"mp-bf16", 2, 64, "  mixedPrecision: bf16\n"},
      {"powersgd-4", 2, 64, "  commHook: {type: powerSGD, powerSGD: {rank: 4, startIter: 10}}\n"},
      {"zero1", 2, 64, "  zero: zero1\n"},
      {"dfa", 2, 64, "  zero: dfa\n"},
      {"one-worker", 1, 128, ""},
      {"four-workers", 4, 32, ""},
  };
  for (const auto& v : variants) {
    SCOPED_TRACE(v.name);
    const double acc = runAccuracy(v.name, v.workers, v.batch, v.extra);
    EXPECT_LE(std::abs(acc - base) * 100, kMaxGapPoints)
        << v.name << ": " << 100 * acc << "% vs allreduce " << 100 * base << "%";
  }
}

}  // namespace
}  // namespace ddp
