// The Trainer with device cuda (world 1: one GPU, an NCCL communicator of one rank) against the
// same run on the CPU: per-step losses and final parameters within float tolerance (cuBLAS sums
// in another order than OpenBLAS, so not bitwise), the same test-accuracy band, for the default
// path and for the supported variants (fp16 hook, bf16 mixed precision, bucket views, clipping,
// accumulation, SGD with nesterov). Checkpoints written on CUDA resume on the CPU. The backend
// is what the worker builds: a ProcessGroup of a host-buffer backend (LocalBackend standing in
// for Gloo; the stop flag and evaluation sums go there) and NcclBackend (gradients).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/tokens/token_file.h"
#include "tests/support/local_backend.h"
#include "tests/support/temp_dir.h"
#include "common/store/in_memory_store.h"
#include "worker/comm/nccl_backend.h"
#include "worker/comm/process_group.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {
namespace {

bool haveGpu() {
  int count = 0;  // stays 0 when cudaGetDeviceCount fails (error 35 without a GPU)
  if (cudaGetDeviceCount(&count) != cudaSuccess) return false;
  return count > 0;
}

TrainerConfig smallConfig() {
  TrainerConfig c;
  c.job = "cuda";
  c.seed = 11;
  c.model = ModelType::kMlp;
  c.mlp.inputs = 64;
  c.mlp.hidden = {32};
  c.mlp.classes = 4;
  c.data = DatasetKind::kSynthetic;
  c.synthetic.samples = 512;
  c.synthetic.sampleShape = {64};
  c.synthetic.classes = 4;
  c.synthetic.separation = 4.0f;
  c.synthetic.seed = 3;
  c.syntheticTestSamples = 256;
  c.batchSize = 16;
  c.epochs = 2;
  c.optimizer = optim::OptimizerConfig::adam(0.01f);
  c.logEverySteps = 1000;
  c.evalBatchSize = 128;
  return c;
}

struct RunOutput {
  TrainResult result;
  std::vector<std::vector<float>> params;
};

std::vector<std::vector<float>> hostParams(model::TrainableModel& m) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : m.parameters()) {
    std::vector<float> h(p->numel());
    m.ops().copyToHost(h.data(), p->data, p->bytes());
    out.push_back(std::move(h));
  }
  EXPECT_TRUE(m.ops().synchronize().isOk());
  return out;
}

// One rank; on CUDA over ProcessGroup(LocalBackend, NcclBackend).
RunOutput train(const TrainerConfig& config, TrainerIo io = {}) {
  static int generation = 0;
  RunOutput out;
  io.progress = nullptr;
  comm::runLocalRanks(1, [&](int, comm::Backend& local) {
    std::unique_ptr<comm::Backend> nccl;
    std::unique_ptr<comm::ProcessGroup> group;
    comm::Backend* backend = &local;
    comm::InMemoryStore store;
    if (config.device.isCuda()) {
      comm::NcclOptions no;
      no.device = config.device.index;
      no.prefix = "trainer_cuda_" + std::to_string(generation++);
      auto n = comm::createNcclBackend(no, store);
      ASSERT_TRUE(n.isOk()) << n.status();
      nccl = std::move(*n);
      auto g = comm::ProcessGroup::createUnowned({&local, nccl.get()});
      ASSERT_TRUE(g.isOk()) << g.status();
      group = std::move(*g);
      backend = group.get();
    }
    auto trainer = Trainer::create(config, *backend, io);
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
    out.result = *r;
    out.params = hostParams((*trainer)->model());
  });
  return out;
}

// Float drift between cuBLAS and OpenBLAS over 64 Adam steps: relative to 1 + |value|.
constexpr double kLossTol = 2e-3;
constexpr float kParamTol = 2e-2f;

void expectFollows(const RunOutput& gpu, const RunOutput& cpu, double lossTol, float paramTol) {
  ASSERT_EQ(gpu.result.steps, cpu.result.steps);
  ASSERT_EQ(gpu.result.stepLosses.size(), cpu.result.stepLosses.size());
  for (size_t s = 0; s < cpu.result.stepLosses.size(); ++s) {
    ASSERT_NEAR(gpu.result.stepLosses[s], cpu.result.stepLosses[s], lossTol * (1 + cpu.result.stepLosses[s]))
        << "step " << s;
  }
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    for (size_t k = 0; k < cpu.params[i].size(); ++k) {
      ASSERT_NEAR(gpu.params[i][k], cpu.params[i][k], paramTol * (1 + std::fabs(cpu.params[i][k])))
          << "parameter " << i << " element " << k;
    }
  }
  // The same accuracy band: a learnt model on both, within a few test samples of each other.
  EXPECT_GT(cpu.result.testAccuracy, 0.85);
  EXPECT_GT(gpu.result.testAccuracy, 0.85);
  EXPECT_NEAR(gpu.result.testAccuracy, cpu.result.testAccuracy, 0.02);
}

TEST(TrainerCudaTest, MatchesTheCpuRun) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  TrainerConfig c = smallConfig();
  const RunOutput cpu = train(c);
  c.device = Device::cuda(0);
  const RunOutput gpu = train(c);
  expectFollows(gpu, cpu, kLossTol, kParamTol);
}

TEST(TrainerCudaTest, SupportedVariantsMatchTheirCpuRuns) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  struct Variant {
    const char* name;
    std::function<void(TrainerConfig&)> apply;
    double lossTol;
    float paramTol;
  };
  const Variant variants[] = {
      {"fp16-hook", [](TrainerConfig& c) { c.hook = CommHookType::kFp16; }, 5e-3, 5e-2f},
      {"bf16-mixed-precision", [](TrainerConfig& c) { c.mixedPrecision = MixedPrecision::kBf16; }, 1e-2, 5e-2f},
      {"bucket-view-clipping", [](TrainerConfig& c) {
         c.gradientAsBucketView = true;
         c.maxGradNorm = 0.5;
       }, kLossTol, kParamTol},
      {"accumulation-sgd-nesterov", [](TrainerConfig& c) {
         c.gradAccumulation = 2;
         c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f, 0.f, 1e-4f, true);
       }, kLossTol, kParamTol},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    TrainerConfig c = smallConfig();
    v.apply(c);
    const RunOutput cpu = train(c);
    c.device = Device::cuda(0);
    const RunOutput gpu = train(c);
    expectFollows(gpu, cpu, v.lossTol, v.paramTol);
  }
}

TEST(TrainerCudaTest, CheckpointWrittenOnCudaResumesOnTheCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  const test::TempDir tempDir("trainer_cuda_test");
  const std::string& dir = tempDir.path();
  TrainerConfig c = smallConfig();
  const RunOutput reference = train(c);  // uninterrupted, CPU
  c.checkpointDir = dir;
  c.device = Device::cuda(0);
  const TrainingFaults stop = TrainingFaults().stopDuring(9);
  TrainerIo io;
  io.faults = &stop;
  const RunOutput first = train(c, io);
  EXPECT_TRUE(first.result.stopped);
  EXPECT_EQ(first.result.steps, 9);
  c.device = Device::cpu();
  const RunOutput second = train(c);
  EXPECT_TRUE(second.result.resumed);
  EXPECT_EQ(second.result.startStep, 9);
  EXPECT_EQ(second.result.steps, reference.result.steps);
  RunOutput stitched = second;
  stitched.result.stepLosses.insert(stitched.result.stepLosses.begin(), first.result.stepLosses.begin(),
                                    first.result.stepLosses.end());
  expectFollows(stitched, reference, kLossTol, kParamTol);
}

// A tiny GPT on a token file: the transformer ops on the GPU follow their CPU twins through a
// training run (losses, parameters, the validation loss).
TEST(TrainerCudaTest, GptMatchesTheCpuRun) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device";
  test::TempDir dir("trainer_cuda_gpt");
  std::vector<int32_t> tokens(4000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7 + i / 13) % 32);
  ASSERT_TRUE(tokens::writeTokenFile(dir.path() + "/train.bin", tokens, tokens::TokenDType::kUint16).isOk());
  TrainerConfig c;
  c.job = "cuda-gpt";
  c.seed = 5;
  c.model = ModelType::kGpt;
  c.gpt.vocabSize = 32;
  c.gpt.contextLength = 16;
  c.gpt.layers = 2;
  c.gpt.heads = 2;
  c.gpt.dModel = 32;
  c.data = DatasetKind::kTokens;
  c.trainTokens.path = dir.path() + "/train.bin";
  c.batchSize = 8;
  c.epochs = 0;
  c.maxSteps = 30;
  c.evalEverySteps = 10;
  c.optimizer = optim::OptimizerConfig::adamw(3e-3f);
  c.weightDecayOn = WeightDecayOn::kLinearWeights;
  c.logEverySteps = 1000;
  const RunOutput cpu = train(c);
  c.device = Device::cuda(0);
  const RunOutput gpu = train(c);
  ASSERT_EQ(gpu.result.stepLosses.size(), cpu.result.stepLosses.size());
  for (size_t s = 0; s < cpu.result.stepLosses.size(); ++s) {
    EXPECT_NEAR(gpu.result.stepLosses[s], cpu.result.stepLosses[s], kLossTol * (1 + cpu.result.stepLosses[s]))
        << "step " << s;
  }
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    for (size_t k = 0; k < cpu.params[i].size(); ++k) {
      ASSERT_NEAR(gpu.params[i][k], cpu.params[i][k], kParamTol * (1 + std::fabs(cpu.params[i][k])))
          << "parameter " << i << " element " << k;
    }
  }
  ASSERT_TRUE(cpu.result.valLoss && gpu.result.valLoss);
  EXPECT_NEAR(*gpu.result.valLoss, *cpu.result.valLoss, kLossTol * (1 + *cpu.result.valLoss));
}

}  // namespace
}  // namespace ddp::runtime
