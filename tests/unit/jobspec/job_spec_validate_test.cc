// JobSpec validation as the single gate (job_spec_validate.cc): every combination the trainer
// refuses is refused here with its field's line and column (Note [Trainer refusals]); non-finite
// numbers are refused as such wherever a number is expected; spec.timeouts' bounds and ordering;
// the bounds on spec.workers; every problem of a document comes back at once.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;
using spec_test::jobWithSpec;

// Lines 5-7 of jobWithSpec(); what follows starts at line 8.
const std::string kBody = "  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 1\n";
const std::string kUnevenBody =
    "  model: {type: mlp}\n  data: {dataset: synthetic, uneven: {enabled: true}}\n  epochs: 1\n";

struct Refusal {
  std::string body;   // the whole spec
  std::string path;   // of the one error expected
  std::string words;  // in its message
  int line;           // where the offending field is
};

void expectOnlyRefusal(const Refusal& c) {
  SCOPED_TRACE(c.body);
  auto errors = errorsOf(jobWithSpec(c.body));
  ASSERT_EQ(errors.size(), 1u) << parseJobSpec(jobWithSpec(c.body)).status();
  EXPECT_EQ(errors[0].path, c.path) << errors[0].toString();
  EXPECT_TRUE(contains(errors[0].message, c.words)) << errors[0].toString();
  EXPECT_EQ(errors[0].line, c.line) << errors[0].toString();
  EXPECT_GT(errors[0].column, 0) << errors[0].toString();
}

// Each combination that worker/training (job_spec_adapter.cc, trainer_config.cc, trainer.cc)
// refuses is refused by the parser, at the field, as the only error.
TEST(JobSpecValidateTest, TrainerRefusalsAreReportedAtTheField) {
  const std::vector<Refusal> cases = {
      {kBody + "  commHook: {type: noop}\n", "spec.commHook.type", "debugging only", 8},
      {kBody + "  join: {enabled: true}\n", "spec.join.enabled", "needs spec.data.uneven.enabled", 8},
      {kUnevenBody + "  join: {enabled: true}\n  gradientAccumulation: {steps: 2}\n", "spec.join.enabled",
       "spec.gradientAccumulation.steps > 1", 8},
      {kBody + "  mixedPrecision: fp16\n  gradientAsBucketView: true\n", "spec.mixedPrecision",
       "cannot be combined with spec.gradientAsBucketView", 8},
      {kBody + "  mixedPrecision: bf16\n  gradientAsBucketView: true\n", "spec.mixedPrecision",
       "bf16 cannot be combined", 8},
      {kBody + "  device: cuda\n  zero: zero1\n", "spec.zero", "zero1 is not supported with spec.device: cuda", 9},
      {kBody + "  device: cuda\n  zero: dfa\n  optimizer: {type: adam}\n", "spec.zero",
       "dfa is not supported with spec.device: cuda", 9},
      {kUnevenBody + "  device: cuda\n  join: {enabled: true}\n", "spec.join.enabled",
       "not supported with spec.device: cuda", 9},
      {kBody + "  device: cuda\n  commHook: {type: powerSGD}\n", "spec.commHook.type",
       "powerSGD is not supported with spec.device: cuda", 9},
      {kBody + "  device: cuda\n  commHook: {type: batchedPowerSGD}\n", "spec.commHook.type",
       "batchedPowerSGD is not supported with spec.device: cuda", 9},
      {"  model: {type: cnn}\n  data:\n    dataset: synthetic\n    synthetic: {features: 64}\n  epochs: 1\n",
       "spec.data.synthetic.features", "must be 784 for model type cnn", 8},
      {"  workers: {count: 2}\n  model: {type: mlp}\n  data:\n    dataset: synthetic\n"
       "    uneven: {enabled: true, counts: [5, 0]}\n  join: {enabled: true}\n  epochs: 1\n",
       "spec.data.uneven.counts[1]", "must be >= 1", 9},
      {"  workers: {count: 2}\n  model: {type: mlp}\n  data:\n    dataset: synthetic\n"
       "    synthetic: {samples: 100}\n    uneven: {enabled: true, counts: [60, 50]}\n"
       "  join: {enabled: true}\n  epochs: 1\n",
       "spec.data.uneven.counts", "sum to 110, more than the 100 training samples", 10},
      {"  workers: {count: 2}\n  model: {type: mlp}\n  data:\n    dataset: fashion-mnist\n    limit: 100\n"
       "    uneven: {enabled: true, counts: [60, 50]}\n  join: {enabled: true}\n  epochs: 1\n",
       "spec.data.uneven.counts", "more than the 100 training samples (spec.data.limit)", 10},
      {"  workers: {count: 2, max: 4}\n  model: {type: mlp}\n  data:\n    dataset: synthetic\n"
       "    synthetic: {samples: 3}\n    dropLast: true\n  epochs: 1\n",
       "spec.data.dropLast", "3 training samples for up to 4 workers", 10},
      {kBody + "  bucketCapMb: 1.0e-7\n", "spec.bucketCapMb", "at least one byte", 8},
      {kBody + "  firstBucketMb: 2.0e+6\n", "spec.firstBucketMb", "1 TiB", 8},
      {"  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 3000000000\n", "spec.epochs",
       "must be <= 2147483647", 7},
  };
  for (const Refusal& c : cases) expectOnlyRefusal(c);
}

// The same specs without the offending half are accepted (the checks are no broader).
TEST(JobSpecValidateTest, TheOtherHalfOfEachRefusedCombinationIsAccepted) {
  const std::string accepted[] = {
      kBody + "  zero: zero1\n",
      kBody + "  optimizer: {maxGradNorm: 1.0}\n",
      kBody + "  zero: dfa\n  optimizer: {type: adam, maxGradNorm: 1.0}\n",
      kBody + "  zero: zero1\n  optimizer: {maxGradNorm: 1.0}\n",  // ZeRO-1 clips since this release
      kUnevenBody + "  join: {enabled: true}\n",
      kBody + "  gradientAccumulation: {steps: 2}\n",
      kBody + "  mixedPrecision: fp16\n",
      kBody + "  gradientAsBucketView: true\n",
      kBody + "  device: cuda\n  commHook: {type: bf16, wrapper: none}\n  mixedPrecision: bf16\n",
      kBody + "  device: cuda\n  optimizer: {maxGradNorm: 1.0}\n  gradientAccumulation: {steps: 2}\n",
      kBody + "  commHook: {type: batchedPowerSGD}\n",
      "  model: {type: cnn}\n  data: {dataset: synthetic, synthetic: {features: 784}}\n  epochs: 1\n",
      "  workers: {count: 2}\n  model: {type: mlp}\n  data:\n    dataset: synthetic\n"
      "    synthetic: {samples: 100}\n    uneven: {enabled: true, counts: [50, 50]}\n"
      "  join: {enabled: true}\n  epochs: 1\n",
      "  workers: {count: 2, max: 4}\n  model: {type: mlp}\n  data:\n    dataset: synthetic\n"
      "    synthetic: {samples: 4}\n    dropLast: true\n  epochs: 1\n",
      kBody + "  bucketCapMb: 1.0e-6\n  firstBucketMb: 1.0e-6\n",
      "  model: {type: mlp}\n  data: {dataset: synthetic}\n  steps: 2147483647\n",
  };
  for (const std::string& body : accepted) {
    auto r = parseJobSpec(jobWithSpec(body));
    EXPECT_TRUE(r.isOk()) << body << r.status();
  }
}

TEST(JobSpecValidateTest, TrainerRefusalsOnAStructBuiltInCode) {
  JobSpec s;
  s.name = "code";
  s.epochs = 1;
  s.device = JobDevice::kCuda;
  s.zero = ZeroMode::kZero1;
  s.optimizer.maxGradNorm = 1;
  s.commHook.type = CommHookType::kNoop;
  s.join.enabled = true;
  s.gradientAccumulationSteps = 2;
  s.mixedPrecision = MixedPrecision::kFp16;
  s.gradientAsBucketView = true;
  std::vector<SpecError> errors;
  EXPECT_EQ(s.validate(&errors).code(), StatusCode::kInvalidArgument);
  for (const char* path : {"spec.zero", "spec.commHook.type", "spec.join.enabled", "spec.mixedPrecision"}) {
    EXPECT_NE(find(errors, path), nullptr) << path;
  }
  EXPECT_EQ(find(errors, "spec.optimizer.maxGradNorm"), nullptr) << "clipping works with zero1";
  // cuda+zero1, noop, join without uneven, join+accumulation, cuda+join,
  // mixedPrecision+gradientAsBucketView.
  EXPECT_EQ(errors.size(), 6u) << s.validate();
}

// `lr: .inf` is "must be a finite number", not "must be > 0", for every number and spelling.
TEST(JobSpecValidateTest, NonFiniteNumbersAreRefusedAsSuch) {
  struct Field {
    std::string yaml;  // X stands for the value
    std::string path;
  };
  const std::vector<Field> fields = {
      {"  optimizer: {lr: X}\n", "spec.optimizer.lr"},
      {"  optimizer: {weightDecay: X}\n", "spec.optimizer.weightDecay"},
      {"  optimizer: {momentum: X}\n", "spec.optimizer.momentum"},
      {"  optimizer: {maxGradNorm: X}\n", "spec.optimizer.maxGradNorm"},
      {"  optimizer: {type: adam, betas: [0.9, X]}\n", "spec.optimizer.betas[1]"},
      {"  optimizer: {type: adam, eps: X}\n", "spec.optimizer.eps"},
      {"  optimizer: {schedule: {type: step, gamma: X}}\n", "spec.optimizer.schedule.gamma"},
      {"  optimizer: {schedule: {type: cosine, minLr: X}}\n", "spec.optimizer.schedule.minLr"},
      {"  commHook: {type: powerSGD, powerSGD: {minCompressionRate: X}}\n",
       "spec.commHook.powerSGD.minCompressionRate"},
      {"  commHook: {type: powerSGD, powerSGD: {orthogonalizationEpsilon: X}}\n",
       "spec.commHook.powerSGD.orthogonalizationEpsilon"},
      {"  bucketCapMb: X\n", "spec.bucketCapMb"},
      {"  firstBucketMb: X\n", "spec.firstBucketMb"},
      {"  timeouts: {heartbeatSeconds: X}\n", "spec.timeouts.heartbeatSeconds"},
      {"  timeouts: {hangSeconds: X}\n", "spec.timeouts.hangSeconds"},
      {"  timeouts: {collectiveSeconds: X}\n", "spec.timeouts.collectiveSeconds"},
      {"  timeouts: {rendezvousSeconds: X}\n", "spec.timeouts.rendezvousSeconds"},
      {"  timeouts: {heartbeatMisses: X}\n", "spec.timeouts.heartbeatMisses"},  // an integer
      {"  workers: {count: X}\n", "spec.workers.count"},                        // an integer
      {"  seed: X\n", "spec.seed"},                                              // an integer
  };
  // YAML's spellings, those of other tools (JSON from Python writes NaN and Infinity) and a
  // decimal beyond the range of a double.
  const char* values[] = {".inf", "-.inf", "+.inf", ".Inf", ".nan", ".NaN", "Infinity", "-Infinity",
                          "NaN", "inf", "1e400", "-1e400"};
  for (const Field& f : fields) {
    for (const char* v : values) {
      std::string yaml = f.yaml;
      yaml.replace(yaml.find('X'), 1, v);
      SCOPED_TRACE(yaml);
      auto errors = errorsOf(jobWithSpec(kBody + yaml));
      ASSERT_EQ(errors.size(), 1u) << parseJobSpec(jobWithSpec(kBody + yaml)).status();
      EXPECT_EQ(errors[0].path, f.path);
      EXPECT_TRUE(contains(errors[0].message, "must be a finite number")) << errors[0].toString();
      EXPECT_FALSE(contains(errors[0].message, "must be >")) << errors[0].toString();
      EXPECT_EQ(errors[0].line, 8);
      EXPECT_GT(errors[0].column, 0);
    }
  }
  // A number that is not one stays a type error; a tiny one is a number.
  auto errors = errorsOf(jobWithSpec(kBody + "  optimizer: {lr: fast}\n"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0].message, "expected a number, got 'fast'")) << errors[0].toString();
  errors = errorsOf(jobWithSpec(kBody + "  optimizer: {lr: 1e-400}\n"));  // 0
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0].message, "must be > 0")) << errors[0].toString();
}

TEST(JobSpecValidateTest, NonFiniteNumbersOnAStructBuiltInCode) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  JobSpec s;
  s.name = "code";
  s.epochs = 1;
  s.optimizer.lr = inf;
  s.optimizer.schedule.type = ScheduleType::kCosine;  // minLr < lr is not checked against inf
  s.optimizer.weightDecay = 1e39;                     // beyond float, the optimizers' precision
  s.timeouts.collectiveSeconds = nan;
  s.bucketCapMb = -inf;
  std::vector<SpecError> errors;
  EXPECT_FALSE(s.validate(&errors).isOk());
  ASSERT_EQ(errors.size(), 4u) << s.validate();
  for (const char* path : {"spec.optimizer.lr", "spec.optimizer.weightDecay",
                           "spec.timeouts.collectiveSeconds", "spec.bucketCapMb"}) {
    const SpecError* e = find(errors, path);
    ASSERT_NE(e, nullptr) << path;
    EXPECT_TRUE(contains(e->message, "must be a finite number")) << e->toString();
  }
}

TEST(JobSpecValidateTest, TimeoutsParseWithDefaultsAndBounds) {
  auto r = parseJobSpec(jobWithSpec(kBody));
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->timeouts, TimeoutsSpec{});
  EXPECT_EQ(r->timeouts.heartbeatSeconds, 1);
  EXPECT_EQ(r->timeouts.heartbeatMisses, 5);
  EXPECT_EQ(r->timeouts.lastCallSeconds, 30);
  EXPECT_EQ(r->timeouts.hangSeconds, 60);
  EXPECT_EQ(r->timeouts.progressSeconds, 600);
  EXPECT_EQ(r->timeouts.controllerSeconds, 60);
  EXPECT_EQ(r->timeouts.collectiveSeconds, 300);
  EXPECT_EQ(r->timeouts.rendezvousSeconds, 600);

  r = parseJobSpec(jobWithSpec(kBody + "  timeouts:\n    heartbeatSeconds: 2\n    heartbeatMisses: 3\n"
                                       "    lastCallSeconds: 4\n    hangSeconds: 7\n    progressSeconds: 8\n"
                                       "    controllerSeconds: 9\n    collectiveSeconds: 10\n"
                                       "    rendezvousSeconds: 604800\n"));
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->timeouts, (TimeoutsSpec{2, 3, 4, 7, 8, 9, 10, 604800}));

  struct Case {
    std::string timeouts;
    std::string path;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"collectiveSeconds: 1e12", "spec.timeouts.collectiveSeconds", "must be <= 604800 s (7 days)"},
      {"rendezvousSeconds: 604800.5", "spec.timeouts.rendezvousSeconds", "must be <= 604800"},
      {"progressSeconds: 1e7", "spec.timeouts.progressSeconds", "must be <= 604800"},
      {"lastCallSeconds: 0", "spec.timeouts.lastCallSeconds", "must be >= 0.01 s, got 0"},
      {"controllerSeconds: -1", "spec.timeouts.controllerSeconds", "must be >= 1 s, got -1"},
      {"heartbeatSeconds: 0", "spec.timeouts.heartbeatSeconds", "must be >= 0.1 s"},
      // Accepted before, then every worker failed (issue: 1e-300 and 0.0001).
      {"heartbeatSeconds: 1e-300", "spec.timeouts.heartbeatSeconds", "must be >= 0.1 s"},
      {"heartbeatSeconds: 0.0001", "spec.timeouts.heartbeatSeconds", "must be >= 0.1 s, got 0.0001"},
      {"progressSeconds: 0.5", "spec.timeouts.progressSeconds", "must be >= 1 s, got 0.5"},
      {"heartbeatMisses: 0", "spec.timeouts.heartbeatMisses", "must be >= 1, got 0"},
      {"heartbeatMisses: 1001", "spec.timeouts.heartbeatMisses", "must be <= 1000, got 1001"},
      {"heartbeatMisses: 2.5", "spec.timeouts.heartbeatMisses", "expected an integer"},
      {"hangSeconds: -5", "spec.timeouts.hangSeconds", "must be >= 1 s"},  // no ordering error too
      {"collectiveSeconds: -5", "spec.timeouts.collectiveSeconds", "must be >= 1 s"},
      {"hangSecs: 5", "spec.timeouts.hangSecs", "unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.timeouts);
    auto errors = errorsOf(jobWithSpec(kBody + "  timeouts: {" + c.timeouts + "}\n"));
    ASSERT_EQ(errors.size(), 1u) << parseJobSpec(jobWithSpec(kBody + "  timeouts: {" + c.timeouts + "}\n")).status();
    EXPECT_EQ(errors[0].path, c.path);
    EXPECT_TRUE(contains(errors[0].message, c.words)) << errors[0].toString();
    EXPECT_EQ(errors[0].line, 8);
  }
}

// heartbeatSeconds x heartbeatMisses < hangSeconds < collectiveSeconds, else the wrong rank is
// blamed; the message names both fields.
TEST(JobSpecValidateTest, TimeoutsMustBeOrdered) {
  struct Case {
    std::string timeouts;
    std::string path;
    std::string otherField;
  };
  const std::vector<Case> cases = {
      {"heartbeatSeconds: 12", "spec.timeouts.hangSeconds", "heartbeatSeconds x spec.timeouts.heartbeatMisses"},
      {"heartbeatMisses: 60", "spec.timeouts.hangSeconds", "heartbeatSeconds x spec.timeouts.heartbeatMisses"},
      {"hangSeconds: 5", "spec.timeouts.hangSeconds", "heartbeatMisses"},  // 1 x 5 is not < 5
      {"hangSeconds: 300", "spec.timeouts.collectiveSeconds", "spec.timeouts.hangSeconds"},  // equal
      {"collectiveSeconds: 60", "spec.timeouts.collectiveSeconds", "spec.timeouts.hangSeconds"},
      {"hangSeconds: 600, collectiveSeconds: 100", "spec.timeouts.collectiveSeconds", "spec.timeouts.hangSeconds"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.timeouts);
    auto errors = errorsOf(jobWithSpec(kBody + "  timeouts: {" + c.timeouts + "}\n"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].path, c.path);
    EXPECT_TRUE(contains(errors[0].message, c.otherField)) << errors[0].toString();
    EXPECT_TRUE(contains(errors[0].message, "wrong rank is blamed")) << errors[0].toString();
    EXPECT_TRUE(contains(errors[0].message, "heartbeatSeconds x heartbeatMisses < hangSeconds < collectiveSeconds"))
        << errors[0].toString();
    EXPECT_EQ(errors[0].line, 8);
  }
  // Both rules broken: both reported.
  auto errors = errorsOf(jobWithSpec(kBody + "  timeouts: {heartbeatSeconds: 100, collectiveSeconds: 50}\n"));
  EXPECT_NE(find(errors, "spec.timeouts.hangSeconds"), nullptr);
  EXPECT_NE(find(errors, "spec.timeouts.collectiveSeconds"), nullptr);
  EXPECT_EQ(errors.size(), 2u);
  // Just inside the bounds.
  auto r = parseJobSpec(jobWithSpec(kBody + "  timeouts: {heartbeatSeconds: 2, heartbeatMisses: 3, "
                                            "hangSeconds: 6.5, collectiveSeconds: 6.75}\n"));
  EXPECT_TRUE(r.isOk()) << r.status();
}

// 1 <= min <= count <= max <= kMaxWorkersPerJob.
TEST(JobSpecValidateTest, WorkersAreBounded) {
  static_assert(kMaxWorkersPerJob == 4096);
  const std::string accepted[] = {"{count: 4096}", "{count: 1, min: 1, max: 4096}", "{count: 4096, min: 4096}"};
  for (const std::string& w : accepted) {
    auto r = parseJobSpec(jobWithSpec(kBody + "  workers: " + w + "\n"));
    EXPECT_TRUE(r.isOk()) << w << r.status();
  }
  struct Case {
    std::string workers;
    std::vector<std::string> paths;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"{count: 4097}", {"spec.workers.count"}, "must be <= 4096"},
      {"{count: 2, max: 5000}", {"spec.workers.max"}, "must be <= 4096"},
      {"{count: 5000, max: 6000}", {"spec.workers.count", "spec.workers.max"}, "must be <= 4096"},
      {"{count: 2, min: 0}", {"spec.workers.min"}, "must be >= 1"},
      {"{count: 2, min: 3, max: 4}", {"spec.workers.count"}, "must lie within [min, max]"},
      {"{count: 3, min: 1, max: 2}", {"spec.workers.count"}, "must lie within [min, max]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.workers);
    auto errors = errorsOf(jobWithSpec(kBody + "  workers: " + c.workers + "\n"));
    ASSERT_EQ(errors.size(), c.paths.size()) << parseJobSpec(jobWithSpec(kBody + "  workers: " + c.workers + "\n")).status();
    for (const std::string& path : c.paths) {
      const SpecError* e = find(errors, path);
      ASSERT_NE(e, nullptr) << path;
      EXPECT_TRUE(contains(e->message, c.words)) << e->toString();
      EXPECT_EQ(e->line, 8);
    }
  }
}

// One document with a problem of every kind: all reported at once, each at its line.
TEST(JobSpecValidateTest, EveryProblemIsReportedAtOnce) {
  const std::string doc = jobWithSpec(
      "  workers: {count: 5000}\n"                     // 5
      "  device: cuda\n"                               // 6
      "  model: {type: mlp}\n"                         // 7
      "  data: {dataset: synthetic}\n"                 // 8
      "  optimizer: {lr: .inf, maxGradNorm: 1}\n"      // 9
      "  zero: zero1\n"                                // 10
      "  commHook: {type: noop}\n"                     // 11
      "  join: {enabled: true}\n"                      // 12
      "  mixedPrecision: fp16\n"                       // 13
      "  gradientAsBucketView: true\n"                 // 14
      "  epochs: 1\n"                                  // 15
      "  timeouts: {collectiveSeconds: 1e12, heartbeatSeconds: 30}\n");  // 16
  auto errors = errorsOf(doc);
  struct Expect {
    std::string path;
    int line;
  };
  const std::vector<Expect> expected = {
      {"spec.workers.count", 5},         {"spec.optimizer.lr", 9},
      {"spec.zero", 10},
      {"spec.commHook.type", 11},        {"spec.join.enabled", 12},
      {"spec.mixedPrecision", 13},   {"spec.timeouts.collectiveSeconds", 16},
      {"spec.timeouts.hangSeconds", 16},
  };
  for (const Expect& e : expected) {
    const SpecError* got = find(errors, e.path);
    ASSERT_NE(got, nullptr) << e.path << "\n" << parseJobSpec(doc).status();
    EXPECT_EQ(got->line, e.line) << got->toString();
  }
  EXPECT_EQ(find(errors, "spec.optimizer.maxGradNorm"), nullptr) << "clipping works with zero1";
  // workers.count, lr (.inf), cuda with zero1, noop, join without uneven, cuda with join,
  // mixedPrecision with gradientAsBucketView, collectiveSeconds over 7 days, heartbeatSeconds x
  // heartbeatMisses over hangSeconds.
  EXPECT_EQ(errors.size(), 9u) << parseJobSpec(doc).status();
  EXPECT_TRUE(contains(parseJobSpec(doc).status().message(), "9 errors"));
}

}  // namespace
}  // namespace ddp

namespace ddp {
namespace {

// A user's dataset (idx, npy, csv): the files each format needs and standardize's shape, each
// refused at its field as the only error; the complete forms are accepted and round-trip.
TEST(JobSpecValidateTest, UserDataNeedsItsFilesAndAWellFormedStandardize) {
  const std::string mlp = "  model: {type: mlp}\n  epochs: 1\n";
  const struct {
    std::string data, path, words;
  } cases[] = {
      {"{dataset: npy, train: {features: /d/x.npy}}", "spec.data.train.targets", "required for dataset npy"},
      {"{dataset: npy, train: {features: /d/x.npy, targets: /d/y.npy}, val: {targets: /d/vy.npy}}",
       "spec.data.val.features", "required with spec.data.val.targets"},
      {"{dataset: csv, train: {path: /d/a.csv}}", "spec.data.target", "required for dataset csv"},
      {"{dataset: idx, valFraction: 0.2}", "spec.data.train.path", "required for dataset idx (the IDX directory)"},
      {"{dataset: idx, train: {path: /d}, classes: 1}", "spec.data.classes", "must be 0 (from the labels) or >= 2"},
      {"{dataset: idx, train: {path: /d}, standardize: {auto: true, mean: [0.5], std: [0.2]}}",
       "spec.data.standardize.auto", "cannot be combined with mean and std"},
      {"{dataset: idx, train: {path: /d}, standardize: {mean: [0.5]}}", "spec.data.standardize.std",
       "required with spec.data.standardize.mean"},
      {"{dataset: idx, train: {path: /d}, standardize: {mean: [0.5, 1], std: [0.2]}}", "spec.data.standardize.std",
       "has 1 values, mean has 2"},
      {"{dataset: idx, train: {path: /d}, standardize: {mean: [0.5], std: [0]}}", "spec.data.standardize.std[0]",
       "must be > 0"},
      {"{dataset: npy, train: {path: /d/x.npy}}", "spec.data.train.path", "only valid when"},
      {"{dataset: synthetic, target: y}", "spec.data.target", "only valid when"},
      {"{dataset: idx, train: {path: /d}}\n  loss: mse", "spec.loss", "mse needs float targets"},
  };
  for (const auto& c : cases) {
    const std::string yaml = jobWithSpec(mlp + "  data: " + c.data + "\n");
    SCOPED_TRACE(yaml);
    auto errors = errorsOf(yaml);
    const SpecError* e = find(errors, c.path);
    ASSERT_NE(e, nullptr) << parseJobSpec(yaml).status();
    EXPECT_TRUE(contains(e->message, c.words)) << e->toString();
  }
  for (const std::string data :
       {"{dataset: idx, train: {path: /d}, val: {path: /d}, standardize: {auto: true}}",
        "{dataset: npy, train: {features: /d/x.npy, targets: /d/y.npy}, classes: 10, valFraction: 0.2}",
        "{dataset: csv, train: {path: /d/a.csv}, target: label, standardize: {mean: [1, 2], std: [3, 4]}}",
        "{dataset: csv, train: {path: /d/a.csv}, target: price}\n  loss: mse"}) {
    auto spec = parseJobSpec(jobWithSpec(mlp + "  data: " + data + "\n"));
    ASSERT_TRUE(spec.isOk()) << spec.status();
    auto back = parseJobSpec(spec->toYaml());
    ASSERT_TRUE(back.isOk()) << back.status() << "\n" << spec->toYaml();
    EXPECT_EQ(*back, *spec);
  }
}

}  // namespace
}  // namespace ddp

namespace ddp {
namespace {

// metadata.namespace: kept (on Kubernetes, where the job's objects go) and written back by
// toYaml only when set; a value that is no namespace name is refused at the field.
TEST(JobSpecValidateTest, MetadataNamespaceIsANamespaceName) {
  auto doc = [](const std::string& ns) {
    return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: j, namespace: " + ns +
           "}\nspec:\n  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 1\n";
  };
  auto spec = parseJobSpec(doc("team-a"));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  EXPECT_EQ(spec->nameSpace, "team-a");
  auto again = parseJobSpec(spec->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status();
  EXPECT_EQ(again->nameSpace, "team-a");
  spec->nameSpace.clear();
  EXPECT_FALSE(contains(spec->toYaml(), "namespace")) << spec->toYaml();
  for (const char* bad : {"Team", "team_a", "-a"}) {
    auto errors = errorsOf(doc(bad));
    const SpecError* e = find(errors, "metadata.namespace");
    ASSERT_NE(e, nullptr) << bad;
    EXPECT_TRUE(contains(e->message, "DNS-1123 label")) << e->toString();
  }
}

}  // namespace
}  // namespace ddp
