#include "worker/training/job_spec_adapter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <utility>

#include "worker/training/training_setup.h"

namespace ddp::runtime {
namespace {

Result<TrainerConfig> adapt(const std::string& yaml) {
  auto spec = parseJobSpec(yaml);
  if (!spec.isOk()) return spec.status();
  return trainerConfigFromJobSpec(*spec);
}

std::string job(const std::string& extra) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: t}\nspec:\n"
         "  model: {type: mlp, hidden: [32]}\n  data: {dataset: synthetic, batchSize: 8}\n  epochs: 1\n" + extra;
}

TEST(JobSpecAdapterTest, EveryExampleJobAdapts) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(DDP_SOURCE_DIR) + "/examples")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    auto spec = loadJobSpecFile(e.path().string());
    ASSERT_TRUE(spec.isOk()) << spec.status();
    auto c = trainerConfigFromJobSpec(*spec);
    EXPECT_TRUE(c.isOk()) << c.status();
    ++n;
  }
  EXPECT_GE(n, 2);
}

TEST(JobSpecAdapterTest, MapsTheFieldsTheTrainerUses) {
  auto c = adapt(job("  optimizer: {type: adamw, lr: 0.003, weightDecay: 0.05, schedule: {type: cosine, warmupSteps: 7, minLr: 0.0001}}\n"
                     "  commHook: {type: powerSGD, powerSGD: {rank: 4, startIter: 20}}\n"
                     "  gradientAccumulation: {steps: 3}\n"
                     "  checkpoint: {dir: /tmp/x, everySteps: 50, keep: 2}\n"
                     "  seed: 9\n"));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->data, DatasetKind::kSynthetic);
  EXPECT_EQ(c->mlp.hidden, (std::vector<int64_t>{32}));
  EXPECT_EQ(c->optimizer.kind, optim::OptimizerKind::kAdamW);
  EXPECT_FLOAT_EQ(c->optimizer.lr, 0.003f);
  EXPECT_FLOAT_EQ(c->optimizer.weightDecay, 0.05f);
  EXPECT_EQ(c->lr.kind, LrScheduleKind::kCosine);
  EXPECT_EQ(c->lr.warmupSteps, 7);
  EXPECT_EQ(c->hook, CommHookType::kPowerSgd);  // the JobSpec's own enums (one vocabulary)
  EXPECT_EQ(c->model, ModelType::kMlp);
  EXPECT_EQ(c->sharding, ZeroMode::kNone);
  EXPECT_EQ(c->powerSgd.matrixApproximationRank, 4);
  EXPECT_EQ(c->powerSgd.startPowerSgdIter, 20);
  EXPECT_EQ(c->gradAccumulation, 3);
  EXPECT_EQ(c->checkpointDir, "/tmp/x");
  EXPECT_EQ(c->checkpointEverySteps, 50);
  EXPECT_EQ(c->keepCheckpoints, 2);
  EXPECT_EQ(c->seed, 9u);
}

TEST(JobSpecAdapterTest, MapsAGptJob) {
  auto c = adapt("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: lm}\nspec:\n"
                 "  model: {type: gpt, contextLength: 32, layers: 3, heads: 2, dModel: 48, mlpHidden: 100,\n"
                 "          norm: rmsnorm, positions: rope, tiedEmbeddings: false, dropout: 0.25}\n"
                 "  data: {dataset: text, train: {path: /d/a.txt}, valFraction: 0.2, batchSize: 4}\n"
                 "  optimizer: {type: adamw, lr: 0.001, weightDecay: 0.1, schedule: {type: linear, warmupSteps: 5, minLr: 0.0001}}\n"
                 "  eval: {everySteps: 25, limit: 9}\n  steps: 100\n");
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_TRUE(c->languageModel());
  EXPECT_EQ(c->model, ModelType::kGpt);
  EXPECT_EQ(c->gpt.vocabSize, 256) << "text: the bytes' vocabulary when vocabSize is left out";
  EXPECT_EQ(c->gpt.contextLength, 32);
  EXPECT_EQ(c->gpt.layers, 3);
  EXPECT_EQ(c->gpt.heads, 2);
  EXPECT_EQ(c->gpt.dModel, 48);
  EXPECT_EQ(c->gpt.mlpHidden, 100);
  EXPECT_EQ(c->gpt.norm, model::GptNormKind::kRmsNorm);
  EXPECT_TRUE(c->gpt.rope);
  EXPECT_FALSE(c->gpt.tiedEmbeddings);
  EXPECT_FLOAT_EQ(c->gpt.dropout, 0.25f);
  EXPECT_EQ(c->data, DatasetKind::kText);
  EXPECT_EQ(c->trainTokens.path, "/d/a.txt");
  EXPECT_TRUE(c->valTokens.path.empty());
  EXPECT_EQ(c->valFraction, 0.2);
  EXPECT_EQ(c->lr.kind, LrScheduleKind::kLinear);
  EXPECT_EQ(c->lr.minLr, 0.0001);
  EXPECT_EQ(c->weightDecayOn, WeightDecayOn::kLinearWeights) << "gpt's default";
  EXPECT_EQ(c->evalEverySteps, 25);
  EXPECT_EQ(c->testLimit, 9);
  EXPECT_EQ(c->maxSteps, 100);
  EXPECT_EQ(c->gpt.precision, model::GptPrecision::kFp32) << "fp32 by default";
  EXPECT_TRUE(c->validate().isOk()) << c->validate();
}

// A user's dataset: the files, target, classes, fractions, limits and standardize reach
// TrainerConfig::userData; its trajectory hash moves with what changes training, not with paths.
TEST(JobSpecAdapterTest, MapsAUserDataJob) {
  const std::string head = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: u}\nspec:\n  model: {type: mlp}\n";
  auto c = adapt(head + "  data: {dataset: csv, train: {path: /d/a.csv}, val: {path: /d/b.csv}, target: y, classes: 3, "
                        "limit: 50, standardize: {mean: [1, 2], std: [3, 4]}}\n  eval: {limit: 20}\n  epochs: 1\n");
  ASSERT_TRUE(c.isOk()) << c.status();
  const data::UserDataConfig& u = c->userData;
  EXPECT_EQ(c->data, DatasetKind::kCsv);
  EXPECT_EQ(u.files.format, datafiles::UserDataFormat::kCsv);
  EXPECT_EQ(u.files.train.path, "/d/a.csv");
  EXPECT_EQ(u.files.val.path, "/d/b.csv");
  EXPECT_EQ(u.files.target, "y");
  EXPECT_EQ(u.classes, 3);
  EXPECT_EQ(u.trainLimit, 50);
  EXPECT_EQ(u.valLimit, 20);
  EXPECT_EQ(u.standardizeMean, (std::vector<double>{1, 2}));
  EXPECT_EQ(u.standardizeStd, (std::vector<double>{3, 4}));
  auto n = adapt(head + "  data: {dataset: npy, train: {features: /d/x.npy, targets: /d/y.npy}, valFraction: 0.3, "
                        "standardize: {auto: true}}\n  epochs: 1\n");
  ASSERT_TRUE(n.isOk()) << n.status();
  EXPECT_EQ(n->userData.files.train.features, "/d/x.npy");
  EXPECT_EQ(n->userData.files.train.targets, "/d/y.npy");
  EXPECT_EQ(n->userData.valFraction, 0.3);
  EXPECT_TRUE(n->userData.standardizeAuto);
  TrainerConfig moved = *n;
  moved.userData.files.train.features = "/elsewhere/x.npy";
  EXPECT_EQ(trajectoryHash(moved), trajectoryHash(*n));
  moved.userData.standardizeAuto = false;
  EXPECT_NE(trajectoryHash(moved), trajectoryHash(*n));
}

TEST(JobSpecAdapterTest, Bf16PrecisionReachesTheGpt) {
  auto c = adapt("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: lm}\nspec:\n"
                 "  model: {type: gpt, contextLength: 8, layers: 1, heads: 2, dModel: 8}\n"
                 "  data: {dataset: text, train: {path: /d/a.txt}}\n  precision: bf16\n  steps: 3\n");
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->gpt.precision, model::GptPrecision::kBf16);
  EXPECT_TRUE(c->validate().isOk()) << c->validate();
  TrainerConfig fp32 = *c;
  fp32.gpt.precision = model::GptPrecision::kFp32;
  EXPECT_NE(trajectoryHash(*c), trajectoryHash(fp32)) << "bf16 matmuls compute another trajectory";
}

TEST(JobSpecAdapterTest, MixedPrecisionBecomesTheReduceDtype) {
  const std::pair<const char*, MixedPrecision> cases[] = {
      {"none", MixedPrecision::kNone}, {"fp16", MixedPrecision::kFp16}, {"bf16", MixedPrecision::kBf16}};
  for (const auto& [text, kind] : cases) {
    SCOPED_TRACE(text);
    auto c = adapt(job(std::string("  mixedPrecision: ") + text + "\n  commHook: {type: powerSGD, powerSGD: {startIter: 2}}\n"));
    ASSERT_TRUE(c.isOk()) << c.status();
    EXPECT_EQ(c->mixedPrecision, kind);
    const ReducerOptions o = makeReducerOptions(*c);
    EXPECT_EQ(o.reduceDtype.has_value(), kind != MixedPrecision::kNone);
    if (kind == MixedPrecision::kFp16) EXPECT_EQ(*o.reduceDtype, DType::kF16);
    if (kind == MixedPrecision::kBf16) EXPECT_EQ(*o.reduceDtype, DType::kBF16);
    EXPECT_TRUE(o.validate().isOk()) << o.validate();
  }
}

TEST(JobSpecAdapterTest, CommThreadPriorityReachesTheReducerOptions) {
  for (auto p : {CommThreadPriority::kAuto, CommThreadPriority::kRealtime, CommThreadPriority::kNormal}) {
    SCOPED_TRACE(commThreadPriorityName(p));
    auto c = adapt(job(std::string("  commThreadPriority: ") + commThreadPriorityName(p) + "\n"));
    ASSERT_TRUE(c.isOk()) << c.status();
    EXPECT_EQ(c->commThreadPriority, p);
    EXPECT_EQ(makeReducerOptions(*c).commThreadPriority, p);
  }
}

// Note [Validated once]: the adapter does not validate the spec again (the gate did). A spec
// built in code that skips the gate is mapped as it is, and the trainer's own precondition
// (TrainerConfig::validate, which a Trainer runs) refuses what it cannot do, naming the field.
TEST(JobSpecAdapterTest, AnUnvalidatedSpecIsRefusedByTheTrainersPrecondition) {
  auto spec = parseJobSpec(job(""));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  JobSpec noop = *spec;
  noop.commHook.type = CommHookType::kNoop;
  ASSERT_FALSE(noop.validate().isOk()) << "the gate would have refused it";
  auto c = trainerConfigFromJobSpec(noop);
  ASSERT_TRUE(c.isOk()) << c.status();
  const Status st = c->validate();
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("spec.commHook.type"), std::string::npos) << st;
}

TEST(JobSpecAdapterTest, RefusesWhatTheTrainerCannotDoNamingTheField) {
  // spec.device: cuda and its refused combinations: trainer_device_test.cc.
  EXPECT_NE(adapt(job("  mixedPrecision: bf16\n  gradientAsBucketView: true\n")).status().message().find("spec.mixedPrecision"),
            std::string::npos);
  EXPECT_NE(adapt(job("  mixedPrecision: fp16\n  zero: dfa\n  optimizer: {type: adam}\n")).status().message().find("spec.mixedPrecision"),
            std::string::npos);
  EXPECT_NE(adapt(job("  commHook: {type: noop}\n")).status().message().find("spec.commHook.type"), std::string::npos);
  EXPECT_NE(adapt(job("  zero: dfa\n  optimizer: {type: adam}\n  commHook: {type: fp16}\n")).status().message().find("spec.commHook"),
            std::string::npos);
}

// Note [Validated once]: a worker decodes its assignment's spec without validating it again (a
// spec stored by an older controller under looser limits still runs), and refuses a spec schema
// other than its own, naming both.
TEST(JobSpecAdapterTest, TheAssignmentsSpecIsDecodedOnceItsSchemaMatches) {
  const std::string stored = job("  timeouts: {heartbeatSeconds: 0.01, hangSeconds: 5, collectiveSeconds: 30}\n");
  ASSERT_FALSE(parseJobSpec(stored).isOk()) << "the gate refuses it today";
  auto decoded = jobSpecOfAssignment(kJobSpecSchemaVersion, stored);
  ASSERT_TRUE(decoded.isOk()) << decoded.status();
  EXPECT_EQ(decoded->timeouts.heartbeatSeconds, 0.01);
  auto other = jobSpecOfAssignment(kJobSpecSchemaVersion + 1, job(""));
  ASSERT_FALSE(other.isOk());
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("schema " + std::to_string(kJobSpecSchemaVersion + 1)), std::string::npos);
  EXPECT_NE(other.status().message().find("schema " + std::to_string(kJobSpecSchemaVersion)), std::string::npos);
  auto broken = jobSpecOfAssignment(kJobSpecSchemaVersion, "spec: [");
  ASSERT_FALSE(broken.isOk());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::runtime
