// JobSpec parsing and validation: every example parses; each kind of error (syntax, wrong
// type, unknown field, missing required field, impossible combination) is reported with its
// field path and location; several errors come back at once; toYaml() round-trips; the JSON
// form of a document parses the same. (The trainer's refusals, non-finite numbers, timeouts and
// worker bounds: job_spec_validate_test.cc; reading files: job_spec_file_test.cc.)
#include "common/jobspec/job_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using spec_test::errorsOf;
using spec_test::find;
using spec_test::kMinimal;
using spec_test::withSpec;

TEST(JobSpecTest, MinimalDocumentGetsDefaults) {
  auto r = parseJobSpec(kMinimal);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->name, "mini");
  EXPECT_EQ(r->workers.count, 1);
  EXPECT_EQ(r->workers.min, 1);
  EXPECT_EQ(r->workers.max, 1);
  EXPECT_EQ(r->data.batchSize, 64);
  EXPECT_EQ(r->commHook.type, CommHookType::kAllreduce);
  EXPECT_EQ(r->commHook.powerSGD.startIter, 1000);
  EXPECT_EQ(r->bucketCapMb, 25.0);
  EXPECT_TRUE(r->validate().isOk());
}

TEST(JobSpecTest, EveryExampleParsesAndRoundTrips) {
  EXPECT_GE(spec_test::loadRoundTripping(DDP_SOURCE_DIR "/examples").size(), 5u);
  auto main = loadJobSpecFile(DDP_SOURCE_DIR "/examples/fashion-mnist.yaml");
  ASSERT_TRUE(main.isOk());
  EXPECT_EQ(main->workers.count, 2);
  EXPECT_EQ(main->model.hidden, (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(main->optimizer.type, OptimizerType::kAdam);
  EXPECT_EQ(main->optimizer.schedule.type, ScheduleType::kCosine);
}

// Every field away from its default, on the CPU (join with uneven inputs, zero1, a PowerSGD hook).
TEST(JobSpecTest, RoundTripOfNonDefaultValues) {
  JobSpec s;
  s.name = "all-fields";
  s.labels = {{"team", "a b"}, {"x", "123"}};
  s.workers = {3, 2, 5};
  s.threadsPerWorker = 4;
  s.model.type = ModelType::kCnn;
  s.model.convChannels = {4, 6};
  s.model.kernelSize = 5;
  s.model.hidden = {};
  s.model.activation = "gelu";
  s.data.batchSize = 17;
  s.data.limit = 1000;
  s.data.dir = "/data/fm";
  s.data.shuffle = false;
  s.data.normalize = false;
  s.data.uneven.enabled = true;
  s.optimizer.type = OptimizerType::kAdamW;
  s.optimizer.lr = 3e-4;
  s.optimizer.beta1 = 0.8;
  s.optimizer.eps = 1e-6;
  s.optimizer.weightDecay = 0.1;
  s.optimizer.schedule = {ScheduleType::kCosine, 50, 1000, 0.1, 1e-5};
  s.zero = ZeroMode::kZero1;
  s.commHook.type = CommHookType::kBatchedPowerSgd;
  s.commHook.wrapper = HookWrapper::kBf16;
  s.commHook.powerSGD = {4, 20, 1.5, false, true, 1e-8, 99, true};
  s.join = {true, true, false};
  s.steps = 123;
  s.seed = (uint64_t{1} << 62) + 5;
  s.checkpoint = {"/ckpt", 10, 2};
  s.eval = {false, 100, 500};
  s.bucketCapMb = 0.1;
  s.firstBucketMb = 0.3;
  s.gradientAsBucketView = true;
  s.maxRestarts = 0;
  s.timeouts = {0.5, 7, 12.5, 30, 900, 45, 120.25, 604800};
  s.logFormat = JobLogFormat::kJson;
  s.commThreadPriority = CommThreadPriority::kNormal;
  ASSERT_TRUE(s.validate().isOk()) << s.validate();
  auto back = parseJobSpec(s.toYaml());
  ASSERT_TRUE(back.isOk()) << back.status() << "\n" << s.toYaml();
  EXPECT_EQ(*back, s) << s.toYaml();
  EXPECT_EQ(back->timeouts.heartbeatMisses, 7);
  EXPECT_EQ(back->timeouts.rendezvousSeconds, kMaxTimeoutSeconds);
  // toYaml() keeps the field order of TimeoutsSpec.
  const std::string yaml = s.toYaml();
  const char* order[] = {"heartbeatSeconds", "heartbeatMisses", "lastCallSeconds", "hangSeconds",
                         "progressSeconds", "controllerSeconds", "collectiveSeconds", "rendezvousSeconds"};
  size_t at = yaml.find("timeouts:");
  ASSERT_NE(at, std::string::npos) << yaml;
  for (const char* key : order) {
    const size_t next = yaml.find(std::string(key) + ":", at);
    ASSERT_NE(next, std::string::npos) << key << "\n" << yaml;
    at = next;
  }
}

// The other values: a CUDA job (which refuses zero, join and PowerSGD) with synthetic data,
// gradient accumulation, mixed precision and clipping.
TEST(JobSpecTest, RoundTripOfACudaJob) {
  JobSpec s;
  s.name = "cuda-job";
  s.device = JobDevice::kCuda;
  s.data.dataset = DatasetKind::kSynthetic;
  s.data.dropLast = true;
  s.data.synthetic = {5000, 64, 7, 2.5, 0.75};
  s.optimizer.momentum = 0.9;
  s.optimizer.nesterov = true;
  s.optimizer.maxGradNorm = 1.5;
  s.optimizer.schedule = {ScheduleType::kStep, 0, 300, 0.5, 0.0};
  s.commHook.type = CommHookType::kFp16;
  s.gradientAccumulationSteps = 4;
  s.mixedPrecision = MixedPrecision::kBf16;
  s.epochs = 3;
  ASSERT_TRUE(s.validate().isOk()) << s.validate();
  auto back = parseJobSpec(s.toYaml());
  ASSERT_TRUE(back.isOk()) << back.status() << "\n" << s.toYaml();
  EXPECT_EQ(*back, s) << s.toYaml();
}

TEST(JobSpecTest, SyntaxErrorHasLineAndColumn) {
  auto errors = errorsOf("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: x\nspec:\n  a: [1, 2\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
  EXPECT_NE(errors[0].message.find("YAML syntax error"), std::string::npos);
  EXPECT_GE(errors[0].line, 3);
  EXPECT_GT(errors[0].column, 0);
}

TEST(JobSpecTest, InvalidUtf8IsOneDocumentErrorAtItsByte) {
  // A name with a byte that is not UTF-8 (Note [Invalid UTF-8]): refused before parsing, located.
  const std::string doc = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: j\xFFob\n";
  auto errors = errorsOf(doc);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
  EXPECT_NE(errors[0].message.find("not valid UTF-8"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("byte 55"), std::string::npos) << errors[0].message;
  EXPECT_EQ(errors[0].line, 4);
  EXPECT_EQ(errors[0].column, 10);
}

// Found by the fuzz test: leading NULs made yaml-cpp read the text as UTF-32 and hand back strings
// that are not UTF-8 (a 500 when the error was written as JSON). Control characters are refused
// first, by position; and anchors, aliases and deep nesting (Note [YAML guard]).
TEST(JobSpecTest, ControlCharactersAliasesAndDeepNestingAreDocumentErrors) {
  auto nul = errorsOf(std::string("\0\0\0", 3) + kMinimal);
  ASSERT_EQ(nul.size(), 1u);
  EXPECT_NE(nul[0].message.find("control character (0x00) at byte 0"), std::string::npos) << nul[0].message;
  auto alias = errorsOf(std::string("x: &a [1, 2]\ny: *a\n") + kMinimal);
  ASSERT_EQ(alias.size(), 1u);
  EXPECT_NE(alias[0].message.find("not allowed in a job document"), std::string::npos) << alias[0].message;
  EXPECT_EQ(alias[0].line, 1);
  auto deep = errorsOf(std::string(200, '[') + std::string(200, ']'));
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_NE(deep[0].message.find("nested deeper than 64 levels"), std::string::npos) << deep[0].message;
  EXPECT_TRUE(parseJobSpec(std::string(kMinimal) + "  # a comment\twith a tab\r\n").isOk());
}

TEST(JobSpecTest, TwoDocumentsInOneBodyAreRefused) {
  auto errors = errorsOf(std::string(kMinimal) + "---\n" + kMinimal);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
  EXPECT_NE(errors[0].message.find("2 YAML documents"), std::string::npos) << errors[0].message;
  EXPECT_GT(errors[0].line, 5) << "located at the second document";
  // A trailing document marker adds no document.
  EXPECT_TRUE(parseJobSpec(std::string(kMinimal) + "---\n").isOk());
}

TEST(JobSpecTest, WrongTypesNameThePathAndExpectedType) {
  auto errors = errorsOf(withSpec("  workers:\n    count: two\n  seed: 1.5\n  join:\n    enabled: maybe\n"));
  const SpecError* count = find(errors, "spec.workers.count");
  ASSERT_NE(count, nullptr);
  EXPECT_NE(count->message.find("expected an integer"), std::string::npos);
  EXPECT_EQ(count->line, 12);
  EXPECT_EQ(count->column, 12);
  ASSERT_NE(find(errors, "spec.seed"), nullptr);
  ASSERT_NE(find(errors, "spec.join.enabled"), nullptr);
  EXPECT_NE(find(errors, "spec.join.enabled")->message.find("expected a boolean"), std::string::npos);
  // A type error does not also produce follow-on errors for the same field.
  EXPECT_EQ(errors.size(), 3u);
  errors = errorsOf(withSpec("  optimizer: [sgd]\n"));
  ASSERT_NE(find(errors, "spec.optimizer"), nullptr);
  EXPECT_NE(find(errors, "spec.optimizer")->message.find("expected a mapping"), std::string::npos);
  errors = errorsOf(withSpec("  optimizer:\n    type: adam\n    betas: [0.9]\n"));
  ASSERT_NE(find(errors, "spec.optimizer.betas"), nullptr);
}

TEST(JobSpecTest, UnknownFieldsAreRejectedWithPath) {
  auto errors = errorsOf(withSpec("  optimiser:\n    lr: 1\n  commHook:\n    type: powerSGD\n    powerSGD:\n      rnk: 2\n"));
  const SpecError* a = find(errors, "spec.optimiser");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->message.find("unknown field"), std::string::npos);
  EXPECT_NE(a->message.find("optimizer"), std::string::npos);  // lists the allowed names
  ASSERT_NE(find(errors, "spec.commHook.powerSGD.rnk"), nullptr);
  EXPECT_EQ(find(errors, "spec.commHook.powerSGD.rnk")->line, 16);
}

TEST(JobSpecTest, MissingRequiredFields) {
  auto errors = errorsOf("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {}\nspec:\n  data: {dataset: synthetic}\n");
  EXPECT_NE(find(errors, "metadata.name"), nullptr);
  EXPECT_NE(find(errors, "spec.model"), nullptr);
  EXPECT_NE(find(errors, "spec.epochs"), nullptr);  // one of epochs / steps
  errors = errorsOf("kind: DDPJob\nmetadata: {name: a}\n");
  EXPECT_NE(find(errors, "apiVersion"), nullptr);
  EXPECT_NE(find(errors, "spec"), nullptr);
  errors = errorsOf("");
  EXPECT_EQ(errors.size(), 1u);
  errors = errorsOf("apiVersion: v2\nkind: Job\nmetadata: {name: Bad_Name}\nspec: {model: {type: mlp}, data: {dataset: synthetic}, steps: 1}\n");
  EXPECT_NE(find(errors, "apiVersion"), nullptr);
  EXPECT_NE(find(errors, "kind"), nullptr);
  EXPECT_NE(find(errors, "metadata.name"), nullptr);
}

TEST(JobSpecTest, ImpossibleCombinationsAreRejected) {
  struct Case {
    std::string extra;
    std::string path;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"  zero: dfa\n  optimizer: {type: adam}\n  commHook: {type: powerSGD}\n", "spec.commHook.type",
       "cannot be combined with zero: dfa"},
      {"  zero: dfa\n", "spec.zero", "needs optimizer type adam"},
      {"  workers: {count: 2, min: 3, max: 2}\n", "spec.workers.min", "must be <= spec.workers.max"},
      {"  commHook:\n    type: powerSGD\n    powerSGD: {startIter: 1}\n",
       "spec.commHook.powerSGD.startIter", "must be > 1 when errorFeedback is on"},
      {"  commHook:\n    type: powerSGD\n    powerSGD: {startIter: 1, errorFeedback: false}\n",
       "spec.commHook.powerSGD.startIter", "must be > 1 when warmStart is on"},
      {"  commHook:\n    type: allreduce\n    powerSGD: {rank: 2}\n", "spec.commHook.powerSGD",
       "only valid when"},
      {"  data:\n    dataset: synthetic\n", "spec.data", "duplicate field"},
      {"  steps: 10\n", "spec.steps", "not both"},
      {"  optimizer: {type: sgd, nesterov: true}\n", "spec.optimizer.nesterov", "requires momentum"},
      {"  optimizer: {type: sgd, betas: [0.9, 0.99]}\n", "spec.optimizer.betas", "only valid when"},
      {"  optimizer: {type: adam, momentum: 0.9}\n", "spec.optimizer.momentum", "only valid for type sgd"},
      {"  checkpoint: {everySteps: 10}\n", "spec.checkpoint.dir", "required when everySteps"},
      {"  join: {throwOnEarlyTermination: true}\n", "spec.join.throwOnEarlyTermination", "only valid"},
      {"  mixedPrecision: fp16\n  zero: dfa\n  optimizer: {type: adam}\n", "spec.mixedPrecision",
       "cannot be combined with zero: dfa"},
      {"  commHook: {type: fp16, wrapper: bf16}\n", "spec.commHook.wrapper", "not fp16"},
      {"  optimizer: {lr: 0.1, schedule: {type: cosine, minLr: 0.5}}\n", "spec.optimizer.schedule.minLr",
       "must be in [0, lr)"},
      {"  optimizer: {schedule: {type: constant, gamma: 0.5}}\n", "spec.optimizer.schedule.gamma",
       "only valid when"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    auto errors = errorsOf(withSpec(c.extra));
    const SpecError* e = find(errors, c.path);
    ASSERT_NE(e, nullptr) << parseJobSpec(withSpec(c.extra)).status();
    EXPECT_NE(e->message.find(c.words), std::string::npos) << e->toString();
    EXPECT_GT(e->line, 0) << e->toString();
  }
}

TEST(JobSpecTest, MixedPrecisionIsAcceptedOnCpuExceptWithDistributedFusedAdam) {
  for (const char* mp : {"fp16", "bf16"}) {
    SCOPED_TRACE(mp);
    auto r = parseJobSpec(withSpec(std::string("  mixedPrecision: ") + mp + "\n  zero: zero1\n"));
    ASSERT_TRUE(r.isOk()) << r.status();
    EXPECT_EQ(r->device, JobDevice::kCpu);
    EXPECT_EQ(r->mixedPrecision, std::string(mp) == "fp16" ? MixedPrecision::kFp16 : MixedPrecision::kBf16);
    auto dfa = errorsOf(withSpec(std::string("  mixedPrecision: ") + mp + "\n  zero: dfa\n  optimizer: {type: adam}\n"));
    ASSERT_EQ(dfa.size(), 1u);
    EXPECT_EQ(dfa[0].path, "spec.mixedPrecision");
  }
}

TEST(JobSpecTest, UnevenDataNeedsJoinAndOneCountPerWorker) {
  const std::string doc = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata: {name: u}
spec:
  workers: {count: 2}
  model: {type: cnn, convChannels: [4, 4, 4, 4, 4]}
  data:
    dataset: fashion-mnist
    dropLast: true
    uneven: {enabled: true, counts: [10, 20, 30]}
  epochs: 1
)";
  auto errors = errorsOf(doc);
  EXPECT_NE(find(errors, "spec.data.uneven.enabled"), nullptr);  // needs join
  EXPECT_NE(find(errors, "spec.data.dropLast"), nullptr);
  EXPECT_NE(find(errors, "spec.data.uneven.counts"), nullptr);   // 3 counts for 2 workers
  EXPECT_NE(find(errors, "spec.model.convChannels"), nullptr);   // 5 pools shrink 28 below 1
  EXPECT_EQ(errors.size(), 4u);
  // All errors at once, in one status message.
  auto r = parseJobSpec(doc);
  EXPECT_NE(r.status().message().find("4 errors"), std::string::npos) << r.status();
}

TEST(JobSpecTest, ValidateOnAStructBuiltInCode) {
  JobSpec s;
  s.name = "ok";
  s.epochs = 1;
  EXPECT_TRUE(s.validate().isOk());
  s.workers.count = 0;
  s.data.batchSize = 0;
  std::vector<SpecError> errors;
  Status st = s.validate(&errors);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(find(errors, "spec.workers.count"), nullptr);
  EXPECT_NE(find(errors, "spec.data.batchSize"), nullptr);
  EXPECT_EQ(errors[0].line, 0);  // no document, no location
}

TEST(JobSpecTest, AcceptsWhatTheApiServerAddsToACustomResource) {
  const std::string doc = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata:
  name: from-cluster
  namespace: team-a
  uid: 3f0c9a5e-1b2c-4d5e-8f90-123456789abc
  resourceVersion: "12345"
  generation: 2
  creationTimestamp: "2026-01-01T00:00:00Z"
  annotations: {note: x}
spec:
  model: {type: mlp}
  data: {dataset: synthetic}
  epochs: 1
status:
  phase: Running
)";
  auto r = parseJobSpec(doc);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->name, "from-cluster");
  // Other unknown metadata is still an error.
  auto errors = errorsOf("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: a, nmae: b}\n"
                         "spec: {model: {type: mlp}, data: {dataset: synthetic}, epochs: 1}\n");
  EXPECT_NE(find(errors, "metadata.nmae"), nullptr);
}

TEST(JobSpecTest, MissingFileIsNotFound) {
  EXPECT_EQ(loadJobSpecFile("/nonexistent/job.yaml").status().code(), StatusCode::kNotFound);
}

// Note [JSON job documents]: JSON is YAML, so parseJobSpec() reads the JSON form of a DDPJob
// (as `kubectl get -o json` or json.dumps write it) with no separate JSON parser.
const char* kJsonJob = R"({
  "apiVersion": "ddp.dev/v1",
  "kind": "DDPJob",
  "metadata": {"name": "json-job", "labels": {"team": "a b", "n": "1"}},
  "spec": {
    "workers": {"count": 2, "min": 1, "max": 4},
    "model": {"type": "mlp", "hidden": [64, 32], "activation": "gelu"},
    "data": {"dataset": "synthetic", "batchSize": 32, "synthetic": {"samples": 4096, "features": 64}},
    "optimizer": {"type": "adam", "lr": 1.0E-3, "betas": [0.9, 0.99], "schedule": {"type": "cosine", "minLr": 0}},
    "gradientAccumulation": {"steps": 2},
    "steps": 100,
    "checkpoint": {"dir": "/tmp/c", "everySteps": 10},
    "timeouts": {"heartbeatSeconds": 0.5, "hangSeconds": 30, "collectiveSeconds": 120}
  }
}
)";

const char* kSameJobInYaml = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata:
  name: json-job
  labels: {team: a b, n: "1"}
spec:
  workers: {count: 2, min: 1, max: 4}
  model: {type: mlp, hidden: [64, 32], activation: gelu}
  data: {dataset: synthetic, batchSize: 32, synthetic: {samples: 4096, features: 64}}
  optimizer: {type: adam, lr: 0.001, betas: [0.9, 0.99], schedule: {type: cosine, minLr: 0}}
  gradientAccumulation: {steps: 2}
  steps: 100
  checkpoint: {dir: /tmp/c, everySteps: 10}
  timeouts: {heartbeatSeconds: 0.5, hangSeconds: 30, collectiveSeconds: 120}
)";

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

TEST(JobSpecTest, TheJsonFormOfADocumentParses) {
  auto yaml = parseJobSpec(kSameJobInYaml);
  ASSERT_TRUE(yaml.isOk()) << yaml.status();
  // Indented, indented with tabs and CRLF, minified: each gives the same JobSpec.
  std::string minified;
  bool inString = false;
  for (char c : std::string(kJsonJob)) {
    if (c == '"') inString = !inString;
    if (inString || (c != ' ' && c != '\n')) minified += c;
  }
  const std::string forms[] = {kJsonJob, replaceAll(replaceAll(kJsonJob, "  ", "\t"), "\n", "\r\n"), minified};
  for (const std::string& json : forms) {
    SCOPED_TRACE(json);
    auto r = parseJobSpec(json);
    ASSERT_TRUE(r.isOk()) << r.status();
    EXPECT_EQ(*r, *yaml);
  }
  // And toYaml() of it reads back.
  auto back = parseJobSpec(yaml->toYaml());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(*back, *yaml);
}

TEST(JobSpecTest, JsonErrorsCarryLineAndColumn) {
  std::string json = replaceAll(kJsonJob, R"("count": 2)", R"("count": "two")");
  json = replaceAll(json, R"("steps": 100)", R"("steps": 100, "epochs": 1, "optimiser": {})");
  json = replaceAll(json, R"("collectiveSeconds": 120)", R"("collectiveSeconds": 20)");
  auto errors = errorsOf(json);
  const SpecError* count = find(errors, "spec.workers.count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->line, 6);
  EXPECT_EQ(count->column, 26);  // the value "two"
  EXPECT_NE(count->message.find("expected an integer"), std::string::npos);
  ASSERT_NE(find(errors, "spec.optimiser"), nullptr);
  EXPECT_EQ(find(errors, "spec.optimiser")->line, 11);
  ASSERT_NE(find(errors, "spec.steps"), nullptr);  // not both epochs and steps
  EXPECT_EQ(find(errors, "spec.steps")->line, 11);
  const SpecError* collective = find(errors, "spec.timeouts.collectiveSeconds");
  ASSERT_NE(collective, nullptr);
  EXPECT_EQ(collective->line, 13);
  const std::string before = R"(    "timeouts": {"heartbeatSeconds": 0.5, "hangSeconds": 30, "collectiveSeconds": )";
  EXPECT_EQ(collective->column, static_cast<int>(before.size()) + 1);
  EXPECT_EQ(errors.size(), 4u);
  // A JSON syntax error is a YAML syntax error with its place.
  errors = errorsOf(replaceAll(kJsonJob, R"("kind": "DDPJob",)", R"("kind": "DDPJob")"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("YAML syntax error"), std::string::npos);
  EXPECT_GT(errors[0].line, 0);
}

// JSON writes a character outside the BMP as a surrogate pair of escapes, which YAML forbids:
// the parser rewrites them and reports columns of the text as written.
TEST(JobSpecTest, JsonSurrogatePairEscapesParse) {
  const std::string json =
      R"({"apiVersion":"ddp.dev/v1","kind":"DDPJob","metadata":{"name":"j","labels":)"
      R"({"e":"\ud83d\ude00 \ud83d\ude80","q":"\\ud83d\\ude00"}},"spec":{"model":{"type":"mlp"},)"
      R"("data":{"dataset":"synthetic"},"epochs":"x"}})";
  std::vector<SpecError> errors = errorsOf(json);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "spec.epochs");
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_EQ(errors[0].column, static_cast<int>(json.find(R"("x")")) + 1);
  auto r = parseJobSpec(replaceAll(json, R"("x")", "2"));
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->labels.at("e"), "\xF0\x9F\x98\x80 \xF0\x9F\x9A\x80");
  EXPECT_EQ(r->labels.at("q"), "\\ud83d\\ude00");  // an escaped backslash is no escape
}

}  // namespace
}  // namespace ddp
