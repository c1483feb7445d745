// Note [Memory estimate]: a worker's memory from its spec, by closed forms, and the refusal that
// names the field and the figures.
#include "controller/jobs/admission/memory_estimate.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

JobSpec mlp(std::vector<int64_t> hidden) {
  JobSpec s;
  s.model.type = ModelType::kMlp;
  s.model.hidden = std::move(hidden);
  s.data.dataset = DatasetKind::kFashionMnist;
  s.data.batchSize = 64;
  s.optimizer.type = OptimizerType::kSgd;
  return s;
}

TEST(MemoryEstimateTest, TheReadmeMlpByClosedForm) {
  const MemoryEstimate e = estimateWorkerMemory(mlp({256, 256}));
  const int64_t params = (784 * 256 + 256) + (256 * 256 + 256) + (256 * 10 + 10);
  EXPECT_EQ(e.parameters, params);
  EXPECT_EQ(e.modelBytes, 2 * params * 4);
  EXPECT_EQ(e.bucketBytes, params * 4);
  EXPECT_EQ(e.optimizerBytes, 0) << "plain SGD keeps no state";
  EXPECT_EQ(e.activationBytes, 2 * (2 * 256 + 2 * 256 + 2 * 10) * 64 * 4);
  EXPECT_EQ(e.dataBytes, int64_t{70000} * 784 * 4);
}

TEST(MemoryEstimateTest, AdamKeepsTwoCopiesAndZeroShardsThem) {
  JobSpec s = mlp({256});
  s.optimizer.type = OptimizerType::kAdam;
  const int64_t params = estimateWorkerMemory(s).parameters;
  EXPECT_EQ(estimateWorkerMemory(s).optimizerBytes, 2 * params * 4);
  s.zero = ZeroMode::kZero1;
  s.workers.count = s.workers.min = s.workers.max = 4;
  EXPECT_EQ(estimateWorkerMemory(s).optimizerBytes, 2 * params * 4 / 4);
}

TEST(MemoryEstimateTest, TheDefaultCnnByClosedForm) {
  JobSpec s = mlp({128});
  s.model.type = ModelType::kCnn;
  s.model.convChannels = {8, 16};
  s.model.kernelSize = 3;
  // conv 1->8, conv 8->16 (3x3), then 16 x 7 x 7 -> 128 -> 10.
  EXPECT_EQ(estimateWorkerMemory(s).parameters, (8 * 9 + 8) + (16 * 8 * 9 + 16) + (784 * 128 + 128) + (128 * 10 + 10));
  // Per sample: each conv's output and ReLU, the fully connected outputs and activations (and as
  // much again for their gradients). Per chunk of samples (Note [Conv2d layout]): conv 0's
  // im2col of 9 x 784 floats per sample, 9 samples to 256 KiB, no gradient (the first layer),
  // and its product (8 x 784 per sample); conv 1's im2col of 72 x 196, 4 samples, its gradient
  // and its product (16 x 196).
  const int64_t perSample = 2 * 8 * 784 + 2 * 16 * 196 + 2 * 128 + 2 * 10;
  const int64_t chunks = 9 * (9 * 784 + 8 * 784) + 4 * (2 * 72 * 196 + 16 * 196);
  EXPECT_EQ(estimateWorkerMemory(s).activationBytes, (2 * perSample * 64 + chunks) * 4);
  s.data.batchSize = 2;  // fewer samples than a chunk holds: the chunk is the batch
  EXPECT_EQ(estimateWorkerMemory(s).activationBytes,
            (2 * perSample * 2 + 2 * (9 * 784 + 8 * 784) + 2 * (2 * 72 * 196 + 16 * 196)) * 4);
}

// A declared stack: the mlp's layers count the mlp's parameters; a conv stack by closed form.
TEST(MemoryEstimateTest, ADeclaredStackByClosedForm) {
  JobSpec s = mlp({256, 256});
  const int64_t mlpParams = estimateWorkerMemory(s).parameters;
  s.model.type = ModelType::kSequential;
  s.model.stack = {{.kind = LayerKind::kFlatten},       {.kind = LayerKind::kLinear, .out = 256},
                   {.kind = LayerKind::kRelu},          {.kind = LayerKind::kLinear, .out = 256},
                   {.kind = LayerKind::kRelu},          {.kind = LayerKind::kLinear, .out = 10}};
  EXPECT_EQ(estimateWorkerMemory(s).parameters, mlpParams);
  EXPECT_EQ(estimateWorkerMemory(s).activationBytes, 2 * (784 + 4 * 256 + 10) * 64 * 4);
  // conv 1->4 (3x3, pad 1): [4, 28, 28], a residual block of one conv 4->4, pool [4, 14, 14], flatten, linear 10.
  s.model.stack = {{.kind = LayerKind::kConv2d, .out = 4, .kernel = 3, .padding = 1},
                   {.kind = LayerKind::kResidual, .layers = {{.kind = LayerKind::kConv2d, .out = 4, .kernel = 3, .padding = 1}}},
                   {.kind = LayerKind::kMaxPool2d, .kernel = 2},
                   {.kind = LayerKind::kFlatten},
                   {.kind = LayerKind::kLinear, .out = 10}};
  EXPECT_EQ(estimateWorkerMemory(s).parameters, (4 * 9 + 4) + (4 * 4 * 9 + 4) + (784 * 10 + 10));
  // Per sample: every layer's output. Per chunk: conv 0's im2col of 9 x 784 floats per sample, 9
  // samples to 256 KiB (the first layer: no gradient), and its product (4 x 784); the block's
  // conv: im2col 36 x 784, 2 samples, its gradient and its product.
  const int64_t chunks = 9 * (9 * 784 + 4 * 784) + 2 * (2 * 36 * 784 + 4 * 784);
  EXPECT_EQ(estimateWorkerMemory(s).activationBytes,
            (2 * (784 * 4 + 784 * 4 + 784 * 4 + 196 * 4 + 784 + 10) * 64 + chunks) * 4);
}

TEST(MemoryEstimateTest, AModelThatCannotFitIsRefusedNamingTheFieldAndTheFigures) {
  const JobSpec huge = mlp({100000000});
  WorkerMemoryBudget local{int64_t{32} << 30, "this machine's 32.0 GiB of memory shared by 2 worker(s)", ""};
  Status st = checkWorkerMemory(huge, local);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("spec.model: a worker needs at least ", 0), 0u) << st;
  EXPECT_NE(st.message().find("79500000010 parameters"), std::string::npos) << st;
  EXPECT_NE(st.message().find("more than this machine's 32.0 GiB"), std::string::npos) << st;
  WorkerMemoryBudget pod{int64_t{1} << 30, "the worker pod's memory limit 1Gi", "spec.kubernetes.resources.limits.memory"};
  EXPECT_EQ(checkWorkerMemory(huge, pod).message().rfind("spec.kubernetes.resources.limits.memory: ", 0), 0u);
  EXPECT_TRUE(checkWorkerMemory(mlp({256, 256}), pod).isOk());
  EXPECT_TRUE(checkWorkerMemory(huge, std::nullopt).isOk()) << "nothing known: nothing checked";
}

// A gpt by closed form: the parameter count of worker/model/gpt.h's tiny test model (1208, also
// asserted against the real model in tests/unit/model/gpt_test.cc), and its activations.
TEST(MemoryEstimateTest, AGptByClosedForm) {
  JobSpec s;
  s.model.type = ModelType::kGpt;
  s.model.gpt.vocabSize = 11;
  s.model.gpt.contextLength = 5;
  s.model.gpt.layers = 2;
  s.model.gpt.heads = 2;
  s.model.gpt.dModel = 8;
  s.model.gpt.mlpHidden = 12;
  s.data.dataset = DatasetKind::kTokens;
  s.data.batchSize = 3;
  s.optimizer.type = OptimizerType::kAdamW;
  const MemoryEstimate e = estimateWorkerMemory(s);
  EXPECT_EQ(e.parameters, 1208);
  EXPECT_EQ(e.optimizerBytes, 2 * 1208 * 4);
  const int64_t perSample = 5 * (2 * (8 * 8 + 2 * 12 + 2 * 5) + (6 * 8 + 12) + 3 * 8);
  EXPECT_EQ(e.activationBytes, (perSample * 3 + 11 * 5 * 3) * 4);
  EXPECT_EQ(e.dataBytes, 0) << "token files are memory-mapped";
  JobSpec bf16 = s;
  bf16.precision = ComputePrecision::kBf16;
  EXPECT_EQ(estimateWorkerMemory(bf16).activationBytes, e.activationBytes + 11 * 8 * 4)
      << "the LM head's bf16-rounded weight copy";
  s.model.gpt.tiedEmbeddings = false;
  s.model.gpt.positions = GptPositions::kRope;
  s.model.gpt.norm = GptNorm::kRmsNorm;
  EXPECT_EQ(estimateWorkerMemory(s).parameters, 1208 + 11 * 8 - 5 * 8 - (2 * 2 * 8 + 8));
}

}  // namespace
}  // namespace ddp::controller
