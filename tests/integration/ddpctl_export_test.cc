// `ddpctl export` (docs/MODELS.md, "Exported models") with real processes. The oracle: an
// independent reader (tests/integration/safetensors_numpy.py: numpy, /usr/bin/python3) reads the
// exported file by its PyTorch names, recomputes the forward pass of a few samples in numpy and
// matches the outputs of our model loaded from the same checkpoint (rtol = atol = 1e-4): an MLP,
// a CNN and a GPT, each trained a few steps by `ddpctl run`.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>

#include "tests/integration/cli_process.h"
#include "tests/integration/model_jobs.h"
#include "tests/support/controller_process.h"
#include "common/safetensors/safetensors.h"
#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"
#include "worker/model/gpt.h"
#include "worker/model/module.h"
#include "worker/training/model_description.h"
#include "worker/training/safetensors_weights.h"

namespace ddp {
namespace {

using test::kDdpctl;
using test::kPython;
using test::kScript;
using test::numpyAvailable;
using test::train;

// Our model of the checkpoint in `ckpt`, loaded as predict loads it.
std::unique_ptr<model::TrainableModel> loadOurs(const std::string& ckpt) {
  auto m = runtime::readCheckpointModel(ckpt);
  EXPECT_TRUE(m.isOk()) << m.status();
  if (!m.isOk() || !m->modelSpec) return nullptr;
  auto d = runtime::parseModelDescription(*m->modelSpec, "model_spec");
  EXPECT_TRUE(d.isOk()) << d.status();
  auto built = runtime::buildDescribedModel(*d);
  EXPECT_TRUE(built.isOk()) << built.status();
  EXPECT_TRUE(model::loadSnapshot(m->params, (*built)->parameters(), (*built)->ops()).isOk());
  return std::move(*built);
}

// Exports ckpt, then runs the numpy forward check on inputs.npy / outputs.npy in dir.
void exportAndCheck(const test::TempDir& dir, const std::string& ckpt) {
  const std::string out = dir.path() + "/model.safetensors";
  auto e = test::runCli({kDdpctl, "export", "--checkpoint-dir", ckpt, "-o", out}, 60);
  ASSERT_EQ(e.exitCode, 0) << e.err;
  EXPECT_NE(e.out.find("wrote " + out), std::string::npos) << e.out;
  auto r = test::runCli({kPython, kScript, "forward", out, dir.path() + "/inputs.npy", dir.path() + "/outputs.npy"}, 120);
  std::printf("%s%s", r.out.c_str(), r.err.c_str());
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
}

void checkClassifier(const std::string& name, const std::string& body, int features,
                     const std::function<void(const test::TempDir&)>& writeData = nullptr) {
  if (!numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  test::TempDir dir("ddpctl_export_test");
  if (writeData) writeData(dir);
  std::string text = body;  // $DIR: the test's directory
  for (size_t at; (at = text.find("$DIR")) != std::string::npos;) text.replace(at, 4, dir.path());
  const std::string ckpt = train(dir, name, text);
  auto ours = loadOurs(ckpt);
  ASSERT_NE(ours, nullptr);
  auto* module = dynamic_cast<model::Module*>(ours.get());
  ASSERT_NE(module, nullptr);
  const int n = 5;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(n) * features);
  for (float& v : x) v = normal(rng);
  module->setTraining(false, 0);  // dropout off, as predict runs it
  const float* y = module->forward(x.data(), n);
  std::vector<float> out(y, y + n * module->outputFeatures());
  test::writeNpy<float>(dir.path() + "/inputs.npy", "<f4", {n, features}, x);
  test::writeNpy<float>(dir.path() + "/outputs.npy", "<f4", {n, module->outputFeatures()}, out);
  exportAndCheck(dir, ckpt);
}

TEST(DdpctlExportTest, AnMlpExportMatchesNumpy) {
  checkClassifier("export-mlp",
                  "  model: {type: mlp, hidden: [16, 8], activation: gelu}\n"
                  "  data: {dataset: synthetic, batchSize: 32, synthetic: {samples: 256, features: 20, classes: 4}}\n"
                  "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 3\n",
                  20);
}

TEST(DdpctlExportTest, ACnnExportMatchesNumpy) {
  checkClassifier("export-cnn",
                  "  model: {type: cnn, convChannels: [3, 4], kernelSize: 3, hidden: [8], activation: tanh}\n"
                  "  data: {dataset: synthetic, batchSize: 32, synthetic: {samples: 128, features: 784, classes: 3}}\n"
                  "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 4\n",
                  784);
}

// A declared stack (spec.model.type sequential) with a residual block, pools, a layer norm and a
// dropout, on 2x6x6 samples from .npy files.
TEST(DdpctlExportTest, ADeclaredConvStackWithAResidualBlockMatchesNumpy) {
  const auto writeData = [](const test::TempDir& dir) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    std::vector<float> x(48 * 72);
    for (float& v : x) v = normal(rng);
    std::vector<int64_t> y(48);
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i % 3);
    test::writeNpy<float>(dir.path() + "/x.npy", "<f4", {48, 2, 6, 6}, x);
    test::writeNpy<int64_t>(dir.path() + "/y.npy", "<i8", {48}, y);
  };
  checkClassifier("export-stack",
                  "  model:\n    type: sequential\n    stack:\n"
                  "    - conv2d: {out: 4, kernel: 3, padding: 1}\n"
                  "    - relu: {}\n"
                  "    - residual: {layers: [{conv2d: {out: 4, kernel: 3, padding: 1}}, {gelu: {}},"
                  " {conv2d: {out: 4, kernel: 3, stride: 1, padding: 1}}]}\n"
                  "    - maxpool2d: {kernel: 2}\n"
                  "    - avgpool2d: {kernel: 2, stride: 1}\n"
                  "    - flatten: {}\n"
                  "    - layernorm: {}\n"
                  "    - dropout: {p: 0.1}\n"
                  "    - tanh: {}\n"
                  "    - linear: {out: 3}\n"
                  "  data: {dataset: npy, train: {features: $DIR/x.npy, targets: $DIR/y.npy}, batchSize: 16}\n"
                  "  optimizer: {type: adam, lr: 0.01}\n  epochs: 1\n  seed: 6\n",
                  72, writeData);
}

TEST(DdpctlExportTest, AGptExportMatchesNumpy) {
  if (!numpyAvailable()) GTEST_SKIP() << "/usr/bin/python3 with numpy (Debian python3-numpy) not installed";
  test::TempDir dir("ddpctl_export_test");
  std::string text;
  for (int i = 0; i < 300; ++i) text += "the cat sat. ";
  std::ofstream(dir.path() + "/train.txt") << text;
  const std::string ckpt = train(dir, "export-gpt",
                                 "  model: {type: gpt, contextLength: 16, layers: 2, heads: 2, dModel: 32, "
                                 "tiedEmbeddings: false}\n"
                                 "  data: {dataset: text, train: {path: " + dir.path() + "/train.txt}, batchSize: 8}\n"
                                 "  optimizer: {type: adamw, lr: 0.01}\n  steps: 12\n  seed: 5\n");
  auto ours = loadOurs(ckpt);
  ASSERT_NE(ours, nullptr);
  auto* gpt = dynamic_cast<model::Gpt*>(ours.get());
  ASSERT_NE(gpt, nullptr);
  const int n = 3, t = gpt->config().contextLength, v = gpt->config().vocabSize;
  std::vector<int32_t> tokens(static_cast<size_t>(n) * t);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i * 7 % text.size()]);
  auto logits = gpt->logits(tokens.data(), n);
  ASSERT_TRUE(logits.isOk()) << logits.status();
  test::writeNpy<int32_t>(dir.path() + "/inputs.npy", "<i4", {n, t}, tokens);
  test::writeNpy<float>(dir.path() + "/outputs.npy", "<f4", {n, t, v}, *logits);
  exportAndCheck(dir, ckpt);
}

// JOB mode: the controller's catalog names the step directory, read here (the local launcher's
// workers share this filesystem); the file is the one --checkpoint-dir gives.
TEST(DdpctlExportTest, AJobOnAControllerExportsThroughItsCatalog) {
  test::TempDir dir("ddpctl_export_test");
  test::ControllerProcess controller(dir.path() + "/state");
  const std::string url = controller.start();
  ASSERT_FALSE(url.empty()) << "ddp-controller did not print its address";
  const std::string token = dir.path() + "/state/token";
  const std::string job = dir.path() + "/job.yaml";
  std::ofstream(job) << test::header("export-job")
                     << "  model: {type: mlp, hidden: [8]}\n"
                        "  data: {dataset: synthetic, batchSize: 32, synthetic: {samples: 128, features: 10, classes: 3}}\n"
                        "  epochs: 1\n  checkpoint: {dir: " << dir.path() << "/ckpt, everySteps: 2}\n";
  const std::vector<std::string> server = {"--server", url, "--token-file", token};
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), kDdpctl);
    args.insert(args.end(), server.begin(), server.end());
    return test::runCli(args, 120);
  };
  ASSERT_EQ(cli({"submit", job}).exitCode, 0);
  auto watched = cli({"watch", "export-job"});
  ASSERT_EQ(watched.exitCode, 0) << watched.out << watched.err;
  auto viaJob = cli({"export", "export-job", "-o", dir.path() + "/job.safetensors"});
  ASSERT_EQ(viaJob.exitCode, 0) << viaJob.err;
  auto viaDir = test::runCli({kDdpctl, "export", "--checkpoint-dir", dir.path() + "/ckpt", "-o", dir.path() + "/dir.safetensors"}, 60);
  ASSERT_EQ(viaDir.exitCode, 0) << viaDir.err;
  auto a = safetensors::readFile(dir.path() + "/job.safetensors");
  auto b = safetensors::readFile(dir.path() + "/dir.safetensors");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_EQ(a->tensors.size(), 4u);
  for (size_t i = 0; i < a->tensors.size(); ++i) EXPECT_TRUE(a->tensors[i].bytes == b->tensors[i].bytes);
  EXPECT_EQ(a->metadata, b->metadata);
  auto missing = cli({"export", "no-such-job"});
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("no-such-job"), std::string::npos) << missing.err;
}

TEST(DdpctlExportTest, ItNeedsOneCheckpointSource) {
  test::TempDir dir("ddpctl_export_test");
  auto none = test::runCli({kDdpctl, "export"}, 30);
  EXPECT_EQ(none.exitCode, 2);
  EXPECT_NE(none.err.find("name a job or give --checkpoint-dir DIR"), std::string::npos) << none.err;
  auto empty = test::runCli({kDdpctl, "export", "--checkpoint-dir", dir.path()}, 30);
  EXPECT_EQ(empty.exitCode, 1);
  EXPECT_NE(empty.err.find(dir.path() + " holds no complete checkpoint"), std::string::npos) << empty.err;
}

}  // namespace
}  // namespace ddp
