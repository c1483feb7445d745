// model_flops: PaLM's training FLOPs per token of a GPT against its closed form, the MFU of
// docs/TRAINING.md's worked example, and the measured CPU peak's sanity.
#include "worker/training/model_flops.h"

#include <gtest/gtest.h>

#include "worker/model/gpt.h"
#include "worker/model/model_options.h"

namespace ddp::runtime {
namespace {

TEST(ModelFlopsTest, FlopsPerTokenCountTheMatmulParametersOnce) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    model::GptConfig c;
    c.vocabSize = 16;
    c.contextLength = 8;
    c.layers = 1;
    c.heads = 2;
    c.dModel = 16;
    c.tiedEmbeddings = tied;
    auto ops = model::makeLayerOps(model::ModelOptions{});
    ASSERT_TRUE(ops.isOk()) << ops.status();
    auto gpt = model::Gpt::create(c, std::move(*ops), 1);
    ASSERT_TRUE(gpt.isOk()) << gpt.status();
    const double d = 16, v = 16;
    // One block: norms 2 x 2d, qkv 3d^2 + 3d, proj d^2 + d, fc 4d^2 + 4d, mproj 4d^2 + d; final
    // norm 2d; the LM head's V x d (the tied embedding, or head.weight); no position table.
    const double n = (12 * d * d + 13 * d) + 2 * d + v * d;
    EXPECT_DOUBLE_EQ(gptFlopsPerToken(c, (*gpt)->parameters()), 6 * n + 12 * 1 * 8 * 16);
  }
}

TEST(ModelFlopsTest, MfuOfTheDocumentedExample) {
  // GPT-2 small: 0.857 GFLOP per token, 30,000 tokens/s on one 312 TFLOP/s A100: 8.2%.
  EXPECT_NEAR(modelFlopsUtilisation(0.857e9, 30000, 1, 312e12), 0.0824, 5e-4);
  EXPECT_NEAR(modelFlopsUtilisation(0.857e9, 60000, 2, 312e12), 0.0824, 5e-4);
  EXPECT_EQ(modelFlopsUtilisation(1e9, 100, 1, 0), 0);
}

TEST(ModelFlopsTest, GpuPeaksComeFromTheTableByCardName) {
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA H100 80GB HBM3"), 67e12);
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA H100 PCIe"), 51e12);
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA H200"), 67e12);
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA A100-SXM4-80GB"), 19.5e12);
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA A10"), 31.2e12) << "not A100's";
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA L4"), 30.3e12);
  EXPECT_EQ(gpuPeakFlopsF32("NVIDIA L40S"), 91.6e12) << "not L4's";
  EXPECT_EQ(gpuPeakFlopsF32("Some Future Card"), std::nullopt) << "unknown: no MFU rather than a guess";
  EXPECT_EQ(gpuPeakFlopsF32("Tesla V100-SXM2-16GB"), 15.7e12);
}

TEST(ModelFlopsTest, Bf16PeaksAreTheTensorCoreColumn) {
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA H100 80GB HBM3"), 989e12);
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA H200"), 989e12);
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA H100 PCIe"), 756e12);
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA A100-SXM4-80GB"), 312e12);
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA A10"), 125e12) << "not A100's";
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA L40S"), 362e12) << "not L40's";
  EXPECT_EQ(gpuPeakFlopsBf16("NVIDIA L4"), 121e12);
  EXPECT_EQ(gpuPeakFlopsBf16("Tesla V100-SXM2-16GB"), std::nullopt) << "no bf16 tensor cores: no MFU";
  EXPECT_EQ(gpuPeakFlopsBf16("Tesla T4"), std::nullopt);
  EXPECT_EQ(gpuPeakFlopsBf16("Some Future Card"), std::nullopt);
}

TEST(ModelFlopsTest, TheMeasuredCpuPeakIsPositive) {
  auto ops = model::makeLayerOps(model::ModelOptions{});
  ASSERT_TRUE(ops.isOk()) << ops.status();
  auto peak = measureCpuPeakFlops(**ops, /*n=*/128, /*runs=*/2);
  ASSERT_TRUE(peak.isOk()) << peak.status();
  EXPECT_GT(*peak, 1e6);  // any CPU does a million FLOP/s
}

}  // namespace
}  // namespace ddp::runtime
