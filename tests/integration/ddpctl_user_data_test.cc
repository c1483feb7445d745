// `ddpctl run` on a user's files with real processes (docs/DATA.md). The oracle: an idx job on
// the Fashion-MNIST directory, standardized by the same constants, trains exactly the job
// `dataset: fashion-mnist` trains (same samples, same float operations): the same final test
// accuracy and the same parameters, bit for bit. A bad file is refused at submission naming the
// field and the file, before any worker starts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/checkpoint/checkpoint_store.h"
#include "tests/integration/cli_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"
#include "worker/data/fashion_mnist.h"

namespace ddp {
namespace {

const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";

std::string header(const std::string& name) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name + "}\nspec:\n";
}

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string p = dir.path() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

std::string modelBytes(const std::string& ckptDir) {
  runtime::CheckpointStore store(ckptDir);
  auto latest = store.findLatestComplete();
  EXPECT_TRUE(latest.isOk());
  if (!latest.isOk() || !latest->manifest) return "";
  auto shard = store.readShard(*latest->manifest, 0);
  EXPECT_TRUE(shard.isOk());
  if (!shard.isOk()) return "";
  auto m = shard->section("model");
  return m.isOk() ? std::string(*m) : "";
}

TEST(DdpctlUserDataTest, AnIdxDirectoryTrainsExactlyLikeFashionMnist) {
  if (!data::fashionMnistAvailable()) GTEST_SKIP() << "Debian package dataset-fashion-mnist not installed";
  test::TempDir dir("ddpctl_user_data_test");
  const std::string fm = data::kFashionMnistDir;
  const std::string common =
      "  workers: {count: 2}\n  model: {type: mlp, hidden: [64]}\n  optimizer: {type: adam, lr: 0.001}\n"
      "  eval: {limit: 1000}\n  epochs: 1\n  seed: 3\n";
  const std::string fashion = header("fashion") + common + "  data: {dataset: fashion-mnist, limit: 3000, batchSize: 32}\n" +
                              "  checkpoint: {dir: " + dir.path() + "/a}\n";
  const std::string idx = header("idx") + common + "  data: {dataset: idx, train: {path: " + fm + "}, val: {path: " + fm +
                          "}, limit: 3000, batchSize: 32, standardize: {mean: [0.2860], std: [0.3530]}}\n" +
                          "  checkpoint: {dir: " + dir.path() + "/b}\n";
  auto a = test::runCli({kDdpctl, "run", write(dir, "a.yaml", fashion), "--log-format", "json"}, 120);
  ASSERT_EQ(a.exitCode, 0) << a.err;
  auto b = test::runCli({kDdpctl, "run", write(dir, "b.yaml", idx), "--log-format", "json"}, 120);
  ASSERT_EQ(b.exitCode, 0) << b.err;
  const double accA = test::lastJsonNumber(a, "done", "test_accuracy");
  const double accB = test::lastJsonNumber(b, "done", "test_accuracy");
  EXPECT_GT(accB, 0.7);
  EXPECT_EQ(accA, accB);
  const std::string ma = modelBytes(dir.path() + "/a"), mb = modelBytes(dir.path() + "/b");
  ASSERT_FALSE(ma.empty());
  EXPECT_TRUE(ma == mb) << "the same parameters, bit for bit";
}

TEST(DdpctlUserDataTest, ABadFileIsRefusedAtSubmissionNamingTheFieldAndTheFile) {
  test::TempDir dir("ddpctl_user_data_test");
  test::writeNpy<float>(dir.path() + "/x.npy", "<f4", {4, 2}, std::vector<float>(8, 1.f));
  test::writeNpy<int64_t>(dir.path() + "/y.npy", "<i8", {5}, {0, 1, 0, 1, 0});
  const std::string job = header("bad-npy") +
                          "  model: {type: mlp}\n  data: {dataset: npy, train: {features: x.npy, targets: y.npy}}\n"
                          "  epochs: 1\n";
  const std::string path = write(dir, "job.yaml", job);
  auto r = test::runCli({"/bin/sh", "-c", "cd " + dir.path() + " && " + kDdpctl + " run " + path}, 60);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.data.train.targets: " + dir.path() + "/y.npy has 5 targets but " + dir.path() +
                       "/x.npy has 4 samples"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("rank 0"), std::string::npos) << "no worker ran";
}

}  // namespace
}  // namespace ddp
