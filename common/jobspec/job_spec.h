#pragma once
// JobSpec: the DDPJob document a user submits (YAML, Kubernetes style), as a plain struct with
// defaults inline. Shared by the worker (what to train), the controller (how many workers,
// checkpoints) and the CRD. The schema, with an example per feature, is docs/JOB_SPEC.md.
//
//   apiVersion: ddp.dev/v1
//   kind: DDPJob
//   metadata: {name: fashion-mnist}
//   spec: {workers: {count: 2}, model: {type: mlp}, data: {dataset: fashion-mnist}, epochs: 3}
//
// parseJobSpec() is the single gate: it reports every problem at once, YAML syntax errors with
// line and column, wrong types (with the expected type), non-finite numbers, unknown fields,
// missing required fields, values out of range and impossible combinations (including every
// combination the trainer would refuse later: Note [Trainer refusals] in job_spec_validate.cc),
// each naming its field path and location ("spec.commHook.powerSGD.startIter (line 11,
// column 27): must be > 1 when errorFeedback is on"). The returned Status lists them all;
// `errors` gets the structured list. The JSON form of a document is accepted as it is (JSON is
// YAML; Note [JSON job documents] in job_spec_json.h). toYaml() writes every field, and
// parsing it gives back an equal JobSpec.
// Thread model: plain values and pure functions; loadJobSpecFile() blocks on a pipe until its
// writer closes it.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/jobspec/job_spec_kubernetes.h"
#include "common/jobspec/layer_spec.h"
#include "common/status.h"
#include "common/thread_priority.h"

namespace ddp {

inline constexpr const char* kJobApiVersion = "ddp.dev/v1";
inline constexpr const char* kJobKind = "DDPJob";
// This controller's spec.managedBy (empty means it too): a DDPJob naming another manager is
// left to that one (Note [Managed by] in controller/kubernetes/ddpjob_reconciler.h).
inline constexpr const char* kDdpControllerManager = "ddp.dev/ddp-controller";

// The most workers one job may ask for (spec.workers.count / min / max). A launcher may allow
// fewer; the controller checks its own limit separately.
inline constexpr int kMaxWorkersPerJob = 4096;
// The most ranks one worker pod may run (spec.workers.perPod): more than the GPUs of any node.
inline constexpr int kMaxRanksPerPod = 64;
// loadJobSpecFile() reads at most this many bytes; a longer job file is refused.
inline constexpr size_t kMaxJobDocumentBytes = 1 << 20;
// Upper bound of every spec.timeouts.*Seconds (7 days).
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
// The smallest timing values validation takes: a heartbeat at most 10 times a second, a last
// call of at least 10 ms, every other timeout at least a second.
inline constexpr double kMinHeartbeatSeconds = 0.1;
inline constexpr double kMinLastCallSeconds = 0.01;
inline constexpr double kMinTimeoutSeconds = 1;
// spec.timeouts.heartbeatMisses lies in [1, kMaxHeartbeatMisses].
inline constexpr int kMaxHeartbeatMisses = 1000;

enum class JobDevice : uint8_t { kCpu = 0, kCuda };
// New values go at the end: the values are fed to trajectoryHash (Note [Trajectory hash]).
enum class ModelType : uint8_t { kMlp = 0, kCnn, kGpt, kSequential };
// The training loss of a feature model: softmax cross-entropy on int classes, or the mean squared
// error on float targets (regression).
enum class LossType : uint8_t { kCrossEntropy = 0, kMse };
enum class DatasetKind : uint8_t { kFashionMnist = 0, kSynthetic, kTokens, kText, kIdx, kNpy, kCsv };
enum class OptimizerType : uint8_t { kSgd = 0, kAdam, kAdamW };
enum class ScheduleType : uint8_t { kConstant = 0, kStep, kCosine, kLinear };
enum class GptNorm : uint8_t { kLayerNorm = 0, kRmsNorm };
enum class GptPositions : uint8_t { kLearned = 0, kRope };
// Which parameters weight decay applies to: all of them, or only the weight matrices of linear
// layers (not biases, norm gains or embeddings: the GPT convention).
enum class WeightDecayOn : uint8_t { kAll = 0, kLinearWeights };
// The GPT's compute precision on CUDA (bf16 matmuls, fp32 master weights and reductions; the
// CPU twin emulates bf16 rounding).
enum class ComputePrecision : uint8_t { kFp32 = 0, kBf16 };
enum class ZeroMode : uint8_t { kNone = 0, kZero1, kDfa };
enum class CommHookType : uint8_t { kAllreduce = 0, kFp16, kBf16, kPowerSgd, kBatchedPowerSgd, kNoop };
enum class HookWrapper : uint8_t { kNone = 0, kFp16, kBf16 };
enum class MixedPrecision : uint8_t { kNone = 0, kFp16, kBf16 };
enum class JobLogFormat : uint8_t { kText = 0, kJson };

// YAML spellings ("cpu", "fashion-mnist", "powerSGD", ...).
const char* jobDeviceName(JobDevice v);
const char* modelTypeName(ModelType v);
const char* datasetKindName(DatasetKind v);
const char* optimizerTypeName(OptimizerType v);
const char* scheduleTypeName(ScheduleType v);
const char* zeroModeName(ZeroMode v);
const char* commHookTypeName(CommHookType v);
const char* hookWrapperName(HookWrapper v);
const char* mixedPrecisionName(MixedPrecision v);
const char* jobLogFormatName(JobLogFormat v);
const char* gptNormName(GptNorm v);
const char* gptPositionsName(GptPositions v);
const char* weightDecayOnName(WeightDecayOn v);
const char* computePrecisionName(ComputePrecision v);
const char* lossTypeName(LossType v);

// One problem found in a job document: "spec.workers.min (line 4, column 10): must be <= max".
struct SpecError {
  std::string path;  // "spec.commHook.powerSGD.startIter"; "" for the document itself
  std::string message;
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;
  std::string toString() const;
};

struct WorkersSpec {
  int count = 1;
  int min = 1;  // elastic lower bound (defaults to count when absent)
  int max = 1;  // elastic upper bound (defaults to count when absent)
  // Ranks per pod on Kubernetes (Note [Several ranks per pod] in controller/launch/kubernetes/
  // worker_objects.h); count, min and max are multiples of it. The local launcher ignores it.
  int perPod = 1;
  bool operator==(const WorkersSpec&) const = default;
};

// The hidden widths a cnn gets in YAML when `hidden` is absent (an mlp gets {256, 256}).
inline const std::vector<int64_t> kCnnDefaultHidden = {128};

// A decoder-only transformer (GPT-2 style, docs/MODELS.md): pre-norm blocks of causal
// self-attention (fused QKV) and a GELU MLP, a final norm, the LM head.
struct GptSpec {
  int vocabSize = 0;        // 0: from the data (256 for text); token files need it set
  int contextLength = 128;
  int layers = 4;
  int heads = 4;
  int dModel = 128;
  int mlpHidden = 0;        // 0: 4 x dModel
  GptNorm norm = GptNorm::kLayerNorm;
  GptPositions positions = GptPositions::kLearned;
  bool tiedEmbeddings = true;
  double dropout = 0;       // deterministic from seed, rank and step
  bool operator==(const GptSpec&) const = default;
};

struct ModelSpec {
  ModelType type = ModelType::kMlp;
  std::vector<int64_t> hidden = {256, 256};  // mlp: hidden widths; cnn: widths after the convs
  std::string activation = "relu";           // relu | tanh | gelu
  std::vector<int64_t> convChannels = {8, 16};  // cnn only
  int kernelSize = 3;                           // cnn only (odd)
  GptSpec gpt;                                  // gpt only (YAML: the fields beside type)
  std::vector<LayerSpec> stack;                 // sequential only (Note [Declared layer stacks])
  bool operator==(const ModelSpec&) const = default;
};

struct SyntheticSpec {
  int64_t samples = 8192;     // training samples (the test split has samples / 4)
  int64_t features = 784;
  int classes = 10;
  double separation = 6.0;
  double noise = 1.0;
  bool operator==(const SyntheticSpec&) const = default;
};

struct UnevenSpec {
  bool enabled = false;
  std::vector<int64_t> counts;  // per-rank sample counts; empty: split as evenly as possible
  bool operator==(const UnevenSpec&) const = default;
};

// One split of a file-based dataset (spec.data.train / spec.data.val): Note [Spec shapes] in
// docs/JOB_SPEC.md.
struct DataSplitSpec {
  std::string path;      // tokens, text: a file or a glob; csv: the file; idx: the directory
  std::string dtype;     // tokens: "" (llm.c header) | uint16 | uint32 (raw files)
  std::string features;  // npy: the features array (N, ...)
  std::string targets;   // npy: the targets array (N,)
  bool empty() const { return path.empty() && features.empty() && targets.empty(); }
  bool operator==(const DataSplitSpec&) const = default;
};

// spec.data.standardize (idx, npy, csv): x -> (x - mean) / std per feature, the statistics given
// or (auto) computed on the training split (Note [Standardization] in worker/data/standardize.h).
struct StandardizeSpec {
  bool automatic = false;    // YAML: auto
  std::vector<double> mean;  // one value, or one per feature
  std::vector<double> std;
  bool operator==(const StandardizeSpec&) const = default;
};

struct DataSpec {
  DatasetKind dataset = DatasetKind::kFashionMnist;
  DataSplitSpec train;      // tokens, text, idx, npy, csv
  DataSplitSpec val;        // the same; empty: valFraction of train
  double valFraction = 0.1; // without val: the last fraction of train
  std::string target;       // csv: the label column
  int classes = 0;          // idx, npy, csv: 0 = the largest training label + 1
  StandardizeSpec standardize;  // idx, npy, csv
  std::string dir = "/usr/share/datasets/fashion-mnist";
  int batchSize = 64;     // per worker
  // The global batch an elastic job keeps (docs/ELASTIC.md); 0: batchSize x workers.count. A
  // scale pins it before it changes workers.count, so the global batch stays the submitted one.
  int64_t globalBatchSize = 0;
  bool shuffle = true;
  bool dropLast = false;  // sampler: drop the tail instead of padding
  bool normalize = true;
  int64_t limit = 0;      // use only the first `limit` training samples (0: all)
  UnevenSpec uneven;
  SyntheticSpec synthetic;
  bool operator==(const DataSpec&) const = default;
};

struct ScheduleSpec {  // after the warmup: constant, step, cosine or linear (to minLr)
  ScheduleType type = ScheduleType::kConstant;
  int64_t warmupSteps = 0;
  int64_t stepSize = 1000;  // step
  double gamma = 0.1;       // step
  double minLr = 0.0;       // cosine
  bool operator==(const ScheduleSpec&) const = default;
};

struct OptimizerSpec {
  OptimizerType type = OptimizerType::kSgd;
  double lr = 0.01;
  double weightDecay = 0.0;
  double momentum = 0.0;    // sgd
  double dampening = 0.0;   // sgd
  bool nesterov = false;    // sgd
  double beta1 = 0.9;       // adam/adamw (YAML: betas: [b1, b2])
  double beta2 = 0.999;
  double eps = 1e-8;        // adam/adamw
  double maxGradNorm = 0.0; // clip by global norm when > 0
  WeightDecayOn weightDecayOn = WeightDecayOn::kAll;  // gpt: kLinearWeights unless set
  ScheduleSpec schedule;
  bool operator==(const OptimizerSpec&) const = default;
};

struct PowerSgdSpec {
  int64_t rank = 1;
  int64_t startIter = 1000;
  double minCompressionRate = 2.0;
  bool errorFeedback = true;
  bool warmStart = true;
  double orthogonalizationEpsilon = 0.0;
  uint64_t seed = 0;
  bool batchTensorsWithSameShape = false;
  bool operator==(const PowerSgdSpec&) const = default;
};

struct CommHookSpec {
  CommHookType type = CommHookType::kAllreduce;
  HookWrapper wrapper = HookWrapper::kNone;  // fp16/bf16 compression around powerSGD etc.
  PowerSgdSpec powerSGD;
  bool operator==(const CommHookSpec&) const = default;
};

struct JoinSpec {
  bool enabled = false;
  bool throwOnEarlyTermination = false;
  bool divideByInitialWorldSize = true;
  bool operator==(const JoinSpec&) const = default;
};

struct CheckpointSpec {
  std::string dir;         // empty: no checkpoints
  int64_t everySteps = 0;  // 0: only at the end of the run (when dir is set)
  int keep = 3;
  bool operator==(const CheckpointSpec&) const = default;
};

// spec.init: the parameters a job starts from instead of its seed's initialization (fine-tuning):
// a safetensors file as `ddpctl export` writes it (docs/MODELS.md, "Exported models").
struct InitSpec {
  std::string from;  // empty: the seed's initialization
  bool operator==(const InitSpec&) const = default;
};

struct EvalSpec {
  bool everyEpoch = true;
  int batchSize = 1000;
  int64_t limit = 0;  // evaluate on the first `limit` test samples (0: all)
  int64_t everySteps = 0;  // > 0: evaluate every this many steps (language models), else per epoch
  bool operator==(const EvalSpec&) const = default;
};

// Every timeout the control plane uses. Each *Seconds is finite, > 0 and <= kMaxTimeoutSeconds;
// heartbeatMisses is in [1, kMaxHeartbeatMisses]; and heartbeatSeconds x heartbeatMisses <
// hangSeconds < collectiveSeconds, so a lost worker is declared lost before its waiting peers
// count as hung, and a hung rank is blamed before healthy ranks time out of their collective.
struct TimeoutsSpec {
  double heartbeatSeconds = 1;      // heartbeat period of each worker
  int heartbeatMisses = 5;          // missed heartbeats before a worker is declared lost
  double lastCallSeconds = 30;      // rendezvous: wait this long after workers.min joined
  double hangSeconds = 60;          // a collective stuck this long is a hang
  double progressSeconds = 600;     // no step completed for this long is a hang
  double controllerSeconds = 60;    // a worker that cannot reach the controller this long exits
  double collectiveSeconds = 300;   // one collective (the worker's own deadline)
  double rendezvousSeconds = 600;   // joining the job
  bool operator==(const TimeoutsSpec&) const = default;
};

// Elastic training (docs/ELASTIC.md): what changes when the world size does.
struct ElasticSpec {
  // true: the global batch (data.batchSize x workers.count) stays, split over the workers of
  // each generation (Note [Elastic batch]); false: the per-worker batch stays and the learning
  // rate scales linearly with the world size.
  bool keepGlobalBatch = true;
  bool operator==(const ElasticSpec&) const = default;
};

// The program each worker runs (docs/EXTENDING.md): empty, ddp-worker; else [path, args...], a
// trainer linked to the engine (worker/control/run_worker.h) with ddp-worker's environment
// contract. The local launcher runs it only where its operator allows (Note [Worker commands] in
// controller/jobs/admission/worker_command_policy.h); Kubernetes runs it in spec.kubernetes.image.
struct WorkerProgramSpec {
  std::vector<std::string> command;
  bool operator==(const WorkerProgramSpec&) const = default;
};

struct JobSpec {
  std::string apiVersion = kJobApiVersion;
  std::string kind = kJobKind;
  std::string name;                          // metadata.name (DNS label)
  std::map<std::string, std::string> labels; // metadata.labels
  std::string nameSpace;                     // metadata.namespace ("": the controller's own)
  // No worker runs while true; a running job checkpoints and stops, and resumes from that
  // checkpoint once false again (Note [Suspended jobs] in controller/jobs/suspension.h).
  bool suspend = false;
  std::string managedBy;  // empty or kDdpControllerManager: this controller; else left alone

  WorkersSpec workers;
  JobDevice device = JobDevice::kCpu;
  int threadsPerWorker = 1;
  ModelSpec model;
  LossType loss = LossType::kCrossEntropy;
  DataSpec data;
  OptimizerSpec optimizer;
  ZeroMode zero = ZeroMode::kNone;
  CommHookSpec commHook;
  JoinSpec join;
  int gradientAccumulationSteps = 1;  // YAML: gradientAccumulation: {steps: N}
  MixedPrecision mixedPrecision = MixedPrecision::kNone;
  ComputePrecision precision = ComputePrecision::kFp32;
  int64_t epochs = 0;  // exactly one of epochs / steps is > 0
  int64_t steps = 0;
  uint64_t seed = 0;
  CheckpointSpec checkpoint;
  InitSpec init;
  EvalSpec eval;
  double bucketCapMb = 25.0;
  double firstBucketMb = 1.0;
  bool gradientAsBucketView = false;
  int maxRestarts = 3;
  TimeoutsSpec timeouts;
  ElasticSpec elastic;
  JobLogFormat logFormat = JobLogFormat::kText;
  // Scheduling of the workers' communication threads (Note [Comm thread priority]).
  CommThreadPriority commThreadPriority = CommThreadPriority::kAuto;
  WorkerProgramSpec worker;
  // How a Kubernetes launcher runs the workers (job_spec_kubernetes.h); the local launcher
  // ignores it.
  KubernetesSpec kubernetes;

  bool operator==(const JobSpec&) const = default;

  // Range checks (non-finite numbers included) and cross-field checks on the struct, the
  // trainer's refusals among them (also run by parseJobSpec). Appends one SpecError per
  // problem, without a location; returns InvalidArgument listing them all, or ok.
  Status validate(std::vector<SpecError>* errors = nullptr) const;
  // The whole document, every field written out; parseJobSpec(toYaml()) == *this.
  std::string toYaml() const;
};

// The checks of spec.kubernetes (job_spec_kubernetes.cc), part of JobSpec::validate(): appends
// one SpecError per problem.
void validateKubernetesSpec(const JobSpec& spec, std::vector<SpecError>* errors);
// The checks of spec.managedBy and of schedulingPolicy's gang fields (job_spec_scheduling.cc),
// part of validateKubernetesSpec.
void validateSchedulingSpec(const JobSpec& spec, std::vector<SpecError>* errors);
// The rule between a DDPJob and its next version (the CRD's transition rule managed-by-immutable,
// Note [Managed by] in controller/kubernetes/ddpjob_reconciler.h): spec.managedBy, absent read
// as "", never changes. `before` and `after` are the two versions' values; nullopt: no change.
std::optional<SpecError> managedByChangeError(std::string_view before, std::string_view after);
// The checks of a declared layer stack and of spec.loss (job_spec_validate_model.cc), part of
// JobSpec::validate(): each layer's parameters, the shapes from the dataset's sample shape
// (Note [Declared layer stacks]), the loss against the targets.
void validateModelStack(const JobSpec& spec, std::vector<SpecError>* errors);
// The per-sample feature shape of the spec's dataset when it is known without reading files:
// fashion-mnist [1, 28, 28], synthetic [features]; nullopt otherwise.
std::optional<std::vector<int64_t>> datasetSampleShape(const JobSpec& spec);
// The field table's plain checks (ranges, finite numbers, allowed spellings: Note [Job spec
// field table] in job_spec_fields.h), part of JobSpec::validate(): one SpecError per problem.
void checkJobSpecFields(const JobSpec& spec, std::vector<SpecError>* errors);

// InvalidArgument "invalid DDPJob: N error(s):\n  <error>\n  ..." (ok when the list is empty).
Status specErrorsToStatus(const std::vector<SpecError>& errors);

// Parses and validates a DDPJob document (YAML, or its JSON form). On failure returns
// InvalidArgument whose message is "invalid DDPJob: N error(s):\n  <error>\n  ..." and, when
// `errors` is given, the list.
Result<JobSpec> parseJobSpec(std::string_view yaml, std::vector<SpecError>* errors = nullptr);
// A document the gate (parseJobSpec) already validated, read back: the controller's stored
// spec, or the spec a worker receives with its assignment (Note [Validated once]). Reads it
// along the field table, with the same shape and type errors, but runs no validate(): the
// document was valid when it was stored, and a limit added since must not fail a running job.
Result<JobSpec> decodeJobSpec(std::string_view yaml);

// Note [Validated once]
// A job document is validated once, where it enters the service: parseJobSpec() in the API
// server, the DDPJob reconciler and ddpctl.
// What the controller stores is toYaml() of that spec, and everything downstream decodes it
// (decodeJobSpec). A worker checks only what it alone can know (the data files, its devices,
// its memory: TrainerConfig::validateDevice, the trainer's setup), and that it speaks the
// controller's spec schema (kJobSpecSchemaVersion, sent with each assignment).
// TrainerConfig::validate() stays the engine's precondition for code that builds a
// TrainerConfig itself (tests, benchmarks, a user's own trainer); a valid spec always passes it
// (Note [Trainer refusals]).

// The version of the job spec's shape and meaning that this build reads and writes. A change
// that an older worker would misread (a field whose meaning changes, a new field an old worker
// would ignore while training differently) bumps it; a worker refuses an assignment of another
// version, naming both.
inline constexpr int kJobSpecSchemaVersion = 1;

// Reads `path` once and parses it. Only a regular file or a pipe / FIFO is read (so /dev/stdin
// and <(...) work), and at most kMaxJobDocumentBytes of it. NotFound when it cannot be opened
// or read; InvalidArgument for a directory ("is a directory, not a job file"), for anything
// else that is not a regular file or a pipe (a device: "is not a regular file"; never opened)
// and for a file over the limit (the message names it); those errors also go to `errors`, as
// one document-level SpecError. Blocks while a pipe's writer keeps it open without writing.
Result<JobSpec> loadJobSpecFile(const std::string& path, std::vector<SpecError>* errors = nullptr);

}  // namespace ddp
