// spec.device: cuda on the CPU side (runs in every build, with or without a GPU): the
// combinations the CUDA path refuses, each with its field path and reason; what a build without
// CUDA answers; what a CUDA build answers on a machine without a GPU (a clear error naming the
// device, no crash). The CUDA training itself is checked by trainer_cuda_test.cc on a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kernels/layer_ops.h"
#include "tests/support/local_backend.h"
#include "worker/comm/nccl_backend.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/training/trainer.h"
#include "worker/training/training_setup.h"

namespace ddp::runtime {
namespace {

TrainerConfig cudaConfig() {
  TrainerConfig c;
  c.device = Device::cuda(0);
  c.model = ModelType::kMlp;
  c.mlp.inputs = 16;
  c.mlp.hidden = {8};
  c.mlp.classes = 3;
  c.data = DatasetKind::kSynthetic;
  c.synthetic.samples = 64;
  c.synthetic.sampleShape = {16};
  c.synthetic.classes = 3;
  c.syntheticTestSamples = 16;
  c.batchSize = 8;
  c.epochs = 1;
  c.optimizer = optim::OptimizerConfig::adam(0.01f);
  return c;
}

struct Refused {
  const char* name;
  std::function<void(TrainerConfig&)> apply;
  const char* prefix;  // the message starts with this
};

TEST(TrainerDeviceTest, CudaRefusesHostOnlyFeaturesNamingTheFieldAndTheReason) {
  const Refused cases[] = {
      {"zero1", [](TrainerConfig& c) { c.sharding = ZeroMode::kZero1; },
       "spec.zero: zero1 is not supported with spec.device: cuda ("},
      {"dfa", [](TrainerConfig& c) { c.sharding = ZeroMode::kDfa; },
       "spec.zero: dfa is not supported with spec.device: cuda ("},
      {"join", [](TrainerConfig& c) {
         c.join = true;
         c.samplerMode = data::SamplerMode::kUneven;
       },
       "spec.join.enabled: true is not supported with spec.device: cuda ("},
      {"powerSGD", [](TrainerConfig& c) { c.hook = CommHookType::kPowerSgd; },
       "spec.commHook.type: powerSGD is not supported with spec.device: cuda ("},
      {"batchedPowerSGD", [](TrainerConfig& c) { c.hook = CommHookType::kBatchedPowerSgd; },
       "spec.commHook.type: batchedPowerSGD is not supported with spec.device: cuda ("},
  };
  for (const Refused& r : cases) {
    SCOPED_TRACE(r.name);
    TrainerConfig c = cudaConfig();
    r.apply(c);
    const Status st = c.validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().rfind(r.prefix, 0), 0u) << st.message();
    EXPECT_EQ(st.message().back(), ')') << "the reason is given: " << st.message();
    // The same combination on the CPU is valid.
    c.device = Device::cpu();
    EXPECT_TRUE(c.validate().isOk()) << c.validate();
  }
}

TEST(TrainerDeviceTest, CudaAcceptsWhatItsPathSupports) {
  const std::function<void(TrainerConfig&)> supported[] = {
      [](TrainerConfig&) {},
      [](TrainerConfig& c) { c.hook = CommHookType::kFp16; },
      [](TrainerConfig& c) { c.hook = CommHookType::kBf16; },
      [](TrainerConfig& c) { c.hookWrapper = HookWrapper::kBf16; },
      [](TrainerConfig& c) { c.mixedPrecision = MixedPrecision::kBf16; },
      [](TrainerConfig& c) { c.gradientAsBucketView = true; },
      [](TrainerConfig& c) { c.gradAccumulation = 3; },
      [](TrainerConfig& c) { c.maxGradNorm = 1.0; },
      [](TrainerConfig& c) { c.optimizer = optim::OptimizerConfig::sgd(0.1f, 0.9f, 0.f, 1e-4f, true); },
  };
  int i = 0;
  for (const auto& apply : supported) {
    SCOPED_TRACE(i++);
    TrainerConfig c = cudaConfig();
    apply(c);
    EXPECT_TRUE(c.validate().isOk()) << c.validate();
  }
}

Result<TrainerConfig> adapt(const std::string& extra) {
  const std::string yaml =
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: t}\nspec:\n"
      "  model: {type: mlp, hidden: [32]}\n  data: {dataset: synthetic, batchSize: 8}\n  epochs: 1\n" + extra;
  auto spec = parseJobSpec(yaml);
  if (!spec.isOk()) return spec.status();
  return trainerConfigFromJobSpec(*spec);
}

TEST(TrainerDeviceTest, JobSpecRefusalsNameTheFieldPath) {
  const std::pair<const char*, const char*> cases[] = {
      {"  device: cuda\n  zero: dfa\n  optimizer: {type: adam}\n", "spec.zero: dfa is not supported with spec.device: cuda"},
      {"  device: cuda\n  zero: zero1\n", "spec.zero: zero1 is not supported with spec.device: cuda"},
      {"  device: cuda\n  commHook: {type: powerSGD}\n", "spec.commHook.type: powerSGD is not supported with spec.device: cuda"},
      {"  device: cuda\n  commHook: {type: batchedPowerSGD}\n",
       "spec.commHook.type: batchedPowerSGD is not supported with spec.device: cuda"},
  };
  for (const auto& [yaml, prefix] : cases) {
    SCOPED_TRACE(yaml);
    auto c = adapt(yaml);
    ASSERT_FALSE(c.isOk());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    // The validator refuses these now, naming the field (with its line and column) and why.
    const std::string expected(prefix);
    const std::string path = expected.substr(0, expected.find(": "));
    const std::string why = expected.substr(expected.find(": ") + 2);
    const std::string& m = c.status().message();
    EXPECT_NE(m.find(path + " (line "), std::string::npos) << c.status();
    EXPECT_NE(m.find(why), std::string::npos) << c.status();
  }
}

TEST(TrainerDeviceTest, JobSpecCudaNeedsACudaBuild) {
  auto c = adapt("  device: cuda\n  commHook: {type: bf16}\n");
  if (comm::ncclBackendAvailable()) {
    ASSERT_TRUE(c.isOk()) << c.status();
    EXPECT_EQ(c->device, Device::cuda(0));
    EXPECT_EQ(c->hook, CommHookType::kBf16);
  } else {
    ASSERT_FALSE(c.isOk());
    EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
    EXPECT_EQ(c.status().message().rfind("spec.device: cuda", 0), 0u) << c.status();
    EXPECT_NE(c.status().message().find("no CUDA"), std::string::npos) << c.status();
  }
  auto cpu = adapt("  device: cpu\n");
  ASSERT_TRUE(cpu.isOk()) << cpu.status();
  EXPECT_EQ(cpu->device, Device::cpu());
}

// Without a GPU (every build here) the trainer refuses cuda at create() with a status naming the
// device: Unimplemented in a CPU-only build, Unavailable in a CUDA build.
TEST(TrainerDeviceTest, TrainerOnCudaWithoutAGpuFailsNamingTheDevice) {
  if (kernels::cudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present: trainer_cuda_test.cc covers this build";
  comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
    TrainerIo io;
    io.progress = nullptr;
    auto t = Trainer::create(cudaConfig(), backend, io);
    ASSERT_FALSE(t.isOk());
    const std::string msg = t.status().message();
    EXPECT_EQ(msg.rfind("spec.device: cuda", 0), 0u) << msg;
    if (comm::ncclBackendAvailable()) {
      EXPECT_EQ(t.status().code(), StatusCode::kUnavailable) << msg;
      EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
      EXPECT_NE(msg.find("no CUDA device is visible"), std::string::npos) << msg;
    } else {
      EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented) << msg;
      EXPECT_NE(msg.find("this build has no CUDA"), std::string::npos) << msg;
    }
  });
}

TEST(TrainerDeviceTest, DeviceCheckPassesOnTheCpuAndNamesTheBackendOnCuda) {
  comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
    TrainerConfig c = cudaConfig();
    c.device = Device::cpu();
    EXPECT_TRUE(checkTrainingDevice(c, backend).isOk());
    if (kernels::cudaDeviceCount() == 0) return;  // the backend check comes after the GPU check
    c.device = Device::cuda(0);
    const Status st = checkTrainingDevice(c, backend);  // LocalBackend carries host buffers only
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(backend.name()), std::string::npos) << st;
  });
}

}  // namespace
}  // namespace ddp::runtime
