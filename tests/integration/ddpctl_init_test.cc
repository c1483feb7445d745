// spec.init.from (docs/MODELS.md, "Exported models"): a job starts from the weights another job
// exported. The oracle: with a learning rate far below the weights' float resolution (SGD at
// 1e-30) training leaves them as they started, so the second job's exported weights are the
// first job's, bit for bit (its own seed would have given others). A file whose tensor does not
// fit the model fails the job naming the tensor and both shapes; a missing file or another
// model's file is refused at submission naming spec.init.from.
#include <gtest/gtest.h>

#include "common/safetensors/safetensors.h"
#include "tests/integration/model_jobs.h"

#include <fstream>

namespace ddp {
namespace {

using test::kDdpctl;

const char* kData = "  data: {dataset: synthetic, batchSize: 32, synthetic: {samples: 128, features: 20, classes: 4}}\n";

std::string exportTo(const std::string& ckpt, const std::string& out) {
  auto e = test::runCli({kDdpctl, "export", "--checkpoint-dir", ckpt, "-o", out}, 60);
  EXPECT_EQ(e.exitCode, 0) << e.err;
  return out;
}

test::CliResult runJob(const test::TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.path() + "/" + name + ".yaml";
  std::ofstream(path) << test::header(name) << body;
  return test::runCli({kDdpctl, "run", path}, 120);
}

TEST(DdpctlInitTest, AJobStartsFromExportedWeights) {
  test::TempDir a("ddpctl_init_test"), b("ddpctl_init_test");
  const std::string trained = exportTo(
      test::train(a, "init-a", std::string("  model: {type: mlp, hidden: [16]}\n") + kData +
                                   "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 3\n"),
      a.path() + "/a.safetensors");
  const std::string fine = exportTo(
      test::train(b, "init-b", std::string("  model: {type: mlp, hidden: [16]}\n") + kData +
                                   "  optimizer: {type: sgd, lr: 1.0e-30}\n  epochs: 1\n  seed: 9\n"
                                   "  init: {from: " + trained + "}\n"),
      b.path() + "/b.safetensors");
  auto fa = safetensors::readFile(trained);
  auto fb = safetensors::readFile(fine);
  ASSERT_TRUE(fa.isOk() && fb.isOk());
  ASSERT_EQ(fa->tensors.size(), 4u);
  for (const safetensors::Tensor& t : fa->tensors) {
    const safetensors::Tensor* same = fb->find(t.name);
    ASSERT_NE(same, nullptr) << t.name;
    EXPECT_TRUE(same->bytes == t.bytes) << t.name << ": the fine-tuned job started from the exported weights";
  }
}

TEST(DdpctlInitTest, ATensorThatDoesNotFitFailsTheJobNamingIt) {
  test::TempDir a("ddpctl_init_test");
  const std::string trained = exportTo(
      test::train(a, "init-a", std::string("  model: {type: mlp, hidden: [16]}\n") + kData +
                                   "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 3\n"),
      a.path() + "/a.safetensors");
  auto r = runJob(a, "init-narrow", std::string("  model: {type: mlp, hidden: [8]}\n") + kData +
                                        "  epochs: 1\n  init: {from: " + trained + "}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE((r.err + r.out).find("spec.init.from: " + trained + ": tensor '0.weight' has shape [16, 20], the model's is [8, 20]"),
            std::string::npos)
      << r.err << r.out;
  auto gpt = runJob(a, "init-gpt",
                    "  model: {type: gpt, contextLength: 8, layers: 1, heads: 1, dModel: 8}\n"
                    "  data: {dataset: text, train: {path: " + a.path() + "/job.yaml}, batchSize: 2}\n"
                    "  steps: 1\n  init: {from: " + trained + "}\n");
  EXPECT_NE(gpt.exitCode, 0);
  EXPECT_NE((gpt.err + gpt.out).find("spec.init.from: " + trained + " holds a model of type: mlp, this job's is gpt"),
            std::string::npos)
      << gpt.err << gpt.out;
}

TEST(DdpctlInitTest, AMissingFileIsRefusedAtSubmission) {
  test::TempDir a("ddpctl_init_test");
  const std::string missing = a.path() + "/none.safetensors";
  auto r = runJob(a, "init-missing", std::string("  model: {type: mlp, hidden: [8]}\n") + kData +
                                         "  epochs: 1\n  init: {from: " + missing + "}\n");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE((r.err + r.out).find("spec.init.from: " + missing + ": cannot open"), std::string::npos) << r.err << r.out;
  EXPECT_EQ((r.err + r.out).find("step 1"), std::string::npos) << "no worker trained";
}

}  // namespace
}  // namespace ddp
