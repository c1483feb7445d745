// The language-model fields of the spec (spec.model.type gpt, datasets tokens and text, their
// train/val split objects, the precision, linear decay, eval every N steps; Note [Spec shapes]
// in docs/JOB_SPEC.md): read, written and checked through the field table, and the rules
// between them, each naming its field. bf16 compute is accepted for gpt and refused for the other
// models.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::errorsOf;
using spec_test::find;
using spec_test::jobWithSpec;

const std::string kGpt =
    "  model: {type: gpt, vocabSize: 300, contextLength: 64, layers: 2, heads: 4, dModel: 64}\n"
    "  data: {dataset: tokens, train: {path: /data/train_*.bin}, val: {path: /data/val.bin}}\n"
    "  steps: 100\n";

void expectAccepted(const std::string& yaml) {
  auto spec = parseJobSpec(yaml);
  EXPECT_TRUE(spec.isOk()) << spec.status() << "\n" << yaml;
}

TEST(JobSpecGptTest, AGptJobIsReadIntoItsFieldsAndRoundTrips) {
  const std::string yaml = jobWithSpec(
      "  model: {type: gpt, vocabSize: 50257, contextLength: 256, layers: 6, heads: 6, dModel: 384, mlpHidden: 1000,\n"
      "          norm: rmsnorm, positions: rope, tiedEmbeddings: false, dropout: 0.1}\n"
      "  data: {dataset: tokens, train: {path: /d/t.bin, dtype: uint16}, val: {path: /d/v.bin}, valFraction: 0.2}\n"
      "  optimizer: {type: adamw, lr: 0.0006, schedule: {type: linear, warmupSteps: 10, minLr: 0.00006}}\n"
      "  eval: {everySteps: 50}\n  precision: bf16\n  steps: 1000\n");
  auto spec = parseJobSpec(yaml);  // read and validated: bf16 compute is a gpt option
  ASSERT_TRUE(spec.isOk()) << spec.status();
  const GptSpec& g = spec->model.gpt;
  EXPECT_EQ(spec->model.type, ModelType::kGpt);
  EXPECT_EQ(g.vocabSize, 50257);
  EXPECT_EQ(g.contextLength, 256);
  EXPECT_EQ(g.layers, 6);
  EXPECT_EQ(g.heads, 6);
  EXPECT_EQ(g.dModel, 384);
  EXPECT_EQ(g.mlpHidden, 1000);
  EXPECT_EQ(g.norm, GptNorm::kRmsNorm);
  EXPECT_EQ(g.positions, GptPositions::kRope);
  EXPECT_FALSE(g.tiedEmbeddings);
  EXPECT_EQ(g.dropout, 0.1);
  EXPECT_EQ(spec->data.dataset, DatasetKind::kTokens);
  EXPECT_EQ(spec->data.train.path, "/d/t.bin");
  EXPECT_EQ(spec->data.train.dtype, "uint16");
  EXPECT_EQ(spec->data.val.path, "/d/v.bin");
  EXPECT_EQ(spec->data.valFraction, 0.2);
  EXPECT_EQ(spec->optimizer.schedule.type, ScheduleType::kLinear);
  EXPECT_EQ(spec->optimizer.schedule.minLr, 0.00006);
  EXPECT_EQ(spec->optimizer.weightDecayOn, WeightDecayOn::kLinearWeights) << "the GPT convention by default";
  EXPECT_EQ(spec->eval.everySteps, 50);
  EXPECT_EQ(spec->precision, ComputePrecision::kBf16);
  auto back = decodeJobSpec(spec->toYaml());
  ASSERT_TRUE(back.isOk()) << back.status() << "\n" << spec->toYaml();
  EXPECT_TRUE(*back == *spec) << spec->toYaml();
}

TEST(JobSpecGptTest, ExistingModelsKeepTheirDefaultsAndRefuseTheGptFields) {
  auto mlp = parseJobSpec(spec_test::withSpec(""));
  ASSERT_TRUE(mlp.isOk()) << mlp.status();
  EXPECT_EQ(mlp->optimizer.weightDecayOn, WeightDecayOn::kAll);
  EXPECT_EQ(mlp->precision, ComputePrecision::kFp32);
  auto errors = errorsOf(jobWithSpec("  model: {type: mlp, layers: 2}\n  data: {dataset: synthetic}\n  epochs: 1\n"));
  ASSERT_NE(find(errors, "spec.model.layers"), nullptr);
  EXPECT_NE(find(errors, "spec.model.layers")->message.find("only valid when spec.model.type is gpt"), std::string::npos);
  errors = errorsOf(jobWithSpec("  model: {type: mlp}\n  data: {dataset: synthetic, train: {path: x}}\n  epochs: 1\n"));
  ASSERT_NE(find(errors, "spec.data.train"), nullptr);
}

TEST(JobSpecGptTest, AValidGptJobIsAccepted) {
  expectAccepted(jobWithSpec(kGpt));
  expectAccepted(jobWithSpec(
      "  model: {type: gpt}\n  data: {dataset: text, train: {path: /usr/share/games/fortunes/fortunes}}\n  steps: 5\n"));
  expectAccepted(jobWithSpec(kGpt + "  optimizer: {type: adamw, weightDecay: 0.1}\n"));
  // linearWeights decay (gpt's default) and clipping with either sharded optimizer.
  for (const char* zero : {"zero1", "dfa"}) {
    expectAccepted(jobWithSpec(kGpt + "  optimizer: {type: adamw, weightDecay: 0.1, maxGradNorm: 1.0}\n  zero: " +
                               zero + "\n"));
  }
}

// bf16 matmuls are a GPT option: accepted with gpt (either device), refused with the other
// models, naming the field, by the table (onlyWhen) and by the rule between fields.
TEST(JobSpecGptTest, Bf16ComputeIsAcceptedForGptOnly) {
  expectAccepted(jobWithSpec(kGpt + "  precision: bf16\n"));
  expectAccepted(jobWithSpec(kGpt + "  precision: fp32\n"));
  auto spec = parseJobSpec(jobWithSpec(kGpt + "  precision: bf16\n"));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  EXPECT_EQ(spec->precision, ComputePrecision::kBf16);
  for (const char* model : {"mlp", "cnn"}) {
    SCOPED_TRACE(model);
    auto errors = errorsOf(jobWithSpec(std::string("  model: {type: ") + model +
                                       "}\n  data: {dataset: fashion-mnist}\n  precision: bf16\n  epochs: 1\n"));
    const SpecError* e = find(errors, "spec.precision");
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e->message.find("only valid when spec.model.type is gpt"), std::string::npos) << e->toString();
  }
  // The rule between fields holds on its own too (a spec built in code, not through the table).
  JobSpec mlp = *parseJobSpec(spec_test::withSpec(""));
  mlp.precision = ComputePrecision::kBf16;
  std::vector<SpecError> errors;
  ASSERT_FALSE(mlp.validate(&errors).isOk());
  bool named = false;
  for (const SpecError& e : errors) {
    named = named || (e.path == "spec.precision" && e.message.find("bf16 applies to model type gpt only") != std::string::npos);
  }
  EXPECT_TRUE(named) << specErrorsToStatus(errors);
}

TEST(JobSpecGptTest, RulesBetweenTheFieldsNameTheirField) {
  struct Case {
    std::string body;
    std::string path;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"  model: {type: gpt, vocabSize: 300, dModel: 130, heads: 4}\n  data: {dataset: tokens, train: {path: t}}\n  steps: 5\n",
       "spec.model.dModel", "must be divisible by spec.model.heads (130 % 4 = 2)"},
      {"  model: {type: gpt, vocabSize: 300, dModel: 12, heads: 4, positions: rope}\n  data: {dataset: tokens, train: {path: t}}\n  steps: 5\n",
       "spec.model.positions", "rope needs an even head size (dModel / heads = 3)"},
      {"  model: {type: gpt}\n  data: {dataset: tokens, train: {path: t}}\n  steps: 5\n", "spec.model.vocabSize",
       "required for dataset tokens"},
      {"  model: {type: gpt, vocabSize: 100}\n  data: {dataset: text, train: {path: t}}\n  steps: 5\n", "spec.model.vocabSize",
       "must be 0 or >= 256"},
      {"  model: {type: gpt, vocabSize: 300}\n  data: {dataset: tokens}\n  steps: 5\n", "spec.data.train.path", "required"},
      {"  model: {type: gpt, vocabSize: 300}\n  data: {dataset: tokens, train: {path: t}}\n  epochs: 1\n", "spec.steps",
       "language models train by steps"},
      {"  model: {type: gpt}\n  data: {dataset: synthetic}\n  steps: 5\n", "spec.data.dataset", "must be tokens or text"},
      {"  model: {type: mlp}\n  data: {dataset: text, train: {path: t}}\n  steps: 5\n", "spec.model.type", "must be gpt"},
      {"  model: {type: gpt, vocabSize: 300, dropout: 1}\n  data: {dataset: tokens, train: {path: t}}\n  steps: 5\n",
       "spec.model.dropout", "must be < 1"},
      {"  model: {type: gpt, vocabSize: 300}\n  data: {dataset: tokens, train: {path: t, dtype: int8}}\n  steps: 5\n",
       "spec.data.train.dtype", "must be one of"},
      {"  model: {type: mlp}\n  data: {dataset: synthetic}\n  precision: bf16\n  epochs: 1\n", "spec.precision",
       "only valid when spec.model.type is gpt"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto errors = errorsOf(jobWithSpec(c.body));
    const SpecError* e = find(errors, c.path);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e->message.find(c.words), std::string::npos) << e->toString();
    EXPECT_GT(e->line, 0) << e->toString();
  }
}

}  // namespace
}  // namespace ddp
