// JobSpec::validate(): range and cross-field checks on the struct, every problem at once, each
// naming its field path. parseJobSpec() runs it after parsing and puts each error at the line
// and column of its field.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_names.h"

namespace ddp {

// Note [Trainer refusals]
// validate() refuses every job that the worker would refuse later when it turns the JobSpec
// into a TrainerConfig and sets the trainer up, so that ddpctl, the controller and the CRD report
// it at once with the other problems, with line and column, instead of a worker failing alone
// minutes later. Mirrored here (the worker keeps its own checks for code that builds a
// TrainerConfig directly):
//  - TrainerConfig::validate: commHook.type noop; Trainer::Impl::setup: a cnn on synthetic data
//    whose features are not 784 (the cnn is built for 1x28x28 inputs);
//  - TrainerConfig::validate (trainer_config.cc): join.enabled without data.uneven.enabled; join
//    with gradientAccumulation.steps > 1; mixedPrecision with gradientAsBucketView; PowerSGD's
//    minCompressionRate and orthogonalizationEpsilon (a float) not finite;
//  - TrainerConfig::validateDevice: device cuda with zero1, dfa, join, powerSGD or
//    batchedPowerSGD;
//  - Trainer::Impl::setup (trainer.cc), the sampler and the bucket plan: a rank without training
//    samples (an uneven.counts entry of 0; dropLast, or uneven without counts, with fewer
//    training samples than workers), uneven.counts summing past the training set, a bucket size
//    below one byte;
//  - values the worker narrows: epochs and steps past an int, fields it keeps in single
//    precision past the float range.
//  - TrainerConfig::validate: a declared stack whose shapes do not fit its input
//    (inferStackShapes; validateModelStack in job_spec_validate_model.cc), loss mse (the
//    worker's datasets give class labels).
// Not mirrored: what depends on the machine a worker runs on (cuda in a build without CUDA, no
// visible GPU, a missing or short Fashion-MNIST directory).

namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;
constexpr double kMaxBucketMb = 1024.0 * 1024.0;  // 1 TiB: far above any model, and fits size_t
constexpr int64_t kMaxRunLength = std::numeric_limits<int32_t>::max();  // the trainer counts epochs in an int
constexpr int kCnnImageSide = 28;  // the cnn is built for 1x28x28 inputs (job_spec_adapter.cc)

// How the worker stores a number: a field kept in single precision must also fit a float.
enum class Precision { kDouble, kSingle };

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Collects errors with a terse API: check(cond, path, message).
class Checker {
 public:
  explicit Checker(std::vector<SpecError>* out) : out_(out) {}
  // Records `message` at `path` unless `ok`; returns ok.
  bool check(bool ok, const std::string& path, const std::string& message) {
    if (!ok) out_->push_back({path, message});
    return ok;
  }
  // Records "must be a finite number" unless `v` is one; returns whether it is. Range checks of
  // the field follow only when it is (one mistake, one message).
  bool finite(double v, const std::string& path, Precision precision = Precision::kDouble) {
    if (!std::isfinite(v)) return check(false, path, "must be a finite number (got " + num(v) + ")");
    return check(precision == Precision::kDouble || std::fabs(v) <= FLT_MAX, path,
                 "must be a finite number in single precision, at most " + num(FLT_MAX) +
                     " in magnitude (got " + num(v) + ")");
  }

 private:
  std::vector<SpecError>* out_;
};

bool isPowerSgd(CommHookType t) {
  return t == CommHookType::kPowerSgd || t == CommHookType::kBatchedPowerSgd;
}

// The number of training samples when the document fixes it: exact for synthetic data, an upper
// bound (spec.data.limit) for fashion-mnist, whose size the files decide; -1 when unknown.
int64_t trainSamplesAtMost(const DataSpec& d) {
  if (d.dataset == DatasetKind::kSynthetic) {
    return d.limit > 0 ? std::min(d.limit, d.synthetic.samples) : d.synthetic.samples;
  }
  return d.limit > 0 ? d.limit : -1;
}

void checkDocument(const JobSpec& s, Checker& c) {
  c.check(s.apiVersion == kJobApiVersion, "apiVersion",
          std::string("must be ") + kJobApiVersion + ", got '" + s.apiVersion + "'");
  c.check(s.kind == kJobKind, "kind", std::string("must be ") + kJobKind + ", got '" + s.kind + "'");
  if (s.name.empty()) {
    c.check(false, "metadata.name", "required");
  } else {
    const Status name = checkJobName(s.name);  // Note [Job names]
    c.check(name.isOk(), "metadata.name", name.message());
  }
  c.check(s.nameSpace.empty() || isDns1123Label(s.nameSpace), "metadata.namespace",
          "'" + s.nameSpace + "' is not a namespace name (a DNS-1123 label: 1-63 characters of a-z, 0-9 and -)");
}

// 1 <= min <= count <= max <= kMaxWorkersPerJob.
void checkWorkers(const JobSpec& s, Checker& c) {
  const WorkersSpec& w = s.workers;
  const std::string most = "must be <= " + std::to_string(kMaxWorkersPerJob) +
                           ", the most workers a job may have";
  if (c.check(w.count >= 1, "spec.workers.count", "must be >= 1")) {
    c.check(w.count <= kMaxWorkersPerJob, "spec.workers.count", most);
  }
  // max defaults to count: a count over the limit is reported once, at count.
  if (w.max != w.count) c.check(w.max <= kMaxWorkersPerJob, "spec.workers.max", most);
  c.check(w.min >= 1, "spec.workers.min", "must be >= 1");
  c.check(w.min <= w.max, "spec.workers.min",
          "must be <= spec.workers.max (" + std::to_string(w.min) + " > " + std::to_string(w.max) + ")");
  c.check(w.count >= w.min && w.count <= w.max, "spec.workers.count",
          "must lie within [min, max] = [" + std::to_string(w.min) + ", " + std::to_string(w.max) + "]");
  // A pod is the unit of launch and replacement (Note [Several ranks per pod]): whole pods only.
  if (w.perPod > 1) {
    const std::string per = std::to_string(w.perPod);
    for (const auto& [value, path] : {std::pair{w.count, "spec.workers.count"}, std::pair{w.min, "spec.workers.min"},
                                      std::pair{w.max, "spec.workers.max"}}) {
      c.check(value % w.perPod == 0, path,
              "must be a multiple of spec.workers.perPod (" + per + " ranks per pod; got " + std::to_string(value) + ")");
    }
  }
}

void checkModel(const JobSpec& s, Checker& c) {
  const ModelSpec& m = s.model;
  if (m.type != ModelType::kCnn) return;
  c.check(!m.convChannels.empty(), "spec.model.convChannels", "must not be empty for a cnn");
  if (m.kernelSize > 0) c.check(m.kernelSize % 2 == 1, "spec.model.kernelSize", "must be odd and > 0");
  const int64_t features = s.data.synthetic.features;
  if (s.data.dataset == DatasetKind::kSynthetic && features >= 1) {
    c.check(features == kCnnImageSide * kCnnImageSide, "spec.data.synthetic.features",
            "must be 784 for model type cnn, which takes 1x28x28 images (got " +
                std::to_string(features) + ")");
  }
  const std::string side = std::to_string(kCnnImageSide);
  const size_t blocks = m.convChannels.size();
  c.check(blocks < 31 && (kCnnImageSide >> blocks) >= 1, "spec.model.convChannels",
          std::to_string(blocks) + " conv blocks (each pools by 2) shrink a " + side +
              "x" + side + " image below 1x1");
}

// A language model (spec.model.type gpt) and its data (tokens or text files): the shape of the
// transformer and what its data needs.
void checkLanguageModel(const JobSpec& s, Checker& c) {
  const bool gpt = s.model.type == ModelType::kGpt;
  const bool files = s.data.dataset == DatasetKind::kTokens || s.data.dataset == DatasetKind::kText;
  if (gpt != files) {
    c.check(false, gpt ? "spec.data.dataset" : "spec.model.type",
            gpt ? std::string("must be tokens or text for model type gpt (got ") + datasetKindName(s.data.dataset) + ")"
                : std::string("must be gpt for dataset ") + datasetKindName(s.data.dataset) +
                      " (a language model trains on token windows)");
  }
  if (files) {
    c.check(!s.data.train.path.empty(), "spec.data.train.path", "required for dataset " +
                                                                    std::string(datasetKindName(s.data.dataset)));
    c.check(!s.data.uneven.enabled, "spec.data.uneven.enabled", "is not supported with token windows");
  }
  c.check(s.precision == ComputePrecision::kFp32 || gpt, "spec.precision", "bf16 applies to model type gpt only");
  if (!gpt) return;
  const GptSpec& g = s.model.gpt;
  if (g.heads >= 1 && g.dModel >= 1) {
    const bool divides = g.dModel % g.heads == 0;
    c.check(divides, "spec.model.dModel",
            "must be divisible by spec.model.heads (" + std::to_string(g.dModel) + " % " + std::to_string(g.heads) +
                " = " + std::to_string(g.dModel % g.heads) + ")");
    if (divides && g.positions == GptPositions::kRope) {
      c.check((g.dModel / g.heads) % 2 == 0, "spec.model.positions",
              "rope needs an even head size (dModel / heads = " + std::to_string(g.dModel / g.heads) + ")");
    }
  }
  if (s.data.dataset == DatasetKind::kTokens) {
    c.check(g.vocabSize >= 2, "spec.model.vocabSize", "required for dataset tokens (>= 2): token files do not say it");
  } else if (s.data.dataset == DatasetKind::kText) {
    c.check(g.vocabSize == 0 || g.vocabSize >= 256, "spec.model.vocabSize",
            "must be 0 or >= 256 for dataset text (bytes are tokens 0-255)");
  }
  c.check(s.steps > 0, "spec.steps", "language models train by steps: set spec.steps (not spec.epochs)");
  // What only a worker can see (a token >= vocabSize in a window of the files) fails the job
  // from the worker, naming the file and the token's index.
}

// Every rank needs training samples (Note [Trainer refusals]).
void checkSamplesPerRank(const JobSpec& s, Checker& c) {
  const DataSpec& d = s.data;
  const int64_t samples = trainSamplesAtMost(d);
  if (d.dataset == DatasetKind::kSynthetic && d.synthetic.samples < 1) return;  // reported already
  const std::string have = std::to_string(samples) + " training samples" +
                           (d.dataset == DatasetKind::kSynthetic ? "" : " (spec.data.limit)");
  const bool splitByWorkers = d.uneven.enabled ? d.uneven.counts.empty() : d.dropLast;
  if (splitByWorkers && samples >= 0 && s.workers.max >= 1) {
    c.check(samples >= s.workers.max, d.uneven.enabled ? "spec.data.uneven.enabled" : "spec.data.dropLast",
            have + " for up to " + std::to_string(s.workers.max) +
                " workers leave a rank without any (the trainer refuses such a rank)");
  }
  if (!d.uneven.enabled || d.uneven.counts.empty()) return;
  int64_t sum = 0;
  for (size_t i = 0; i < d.uneven.counts.size(); ++i) {
    const int64_t n = d.uneven.counts[i];
    c.check(n >= 1, "spec.data.uneven.counts[" + std::to_string(i) + "]",
            "must be >= 1 (the trainer refuses a rank without training samples)");
    sum = n > 0 && sum > std::numeric_limits<int64_t>::max() - n ? std::numeric_limits<int64_t>::max()
                                                                 : sum + std::max<int64_t>(n, 0);
  }
  if (samples >= 0) {
    c.check(sum <= samples, "spec.data.uneven.counts",
            "sum to " + std::to_string(sum) + ", more than the " + have);
  }
}

void checkData(const JobSpec& s, Checker& c) {
  const DataSpec& d = s.data;
  c.check(d.globalBatchSize == 0 || !d.uneven.enabled, "spec.data.globalBatchSize",
          "is not supported with spec.data.uneven (each rank reads its own count)");
  if (d.dataset != DatasetKind::kSynthetic) {
    c.check(!d.dir.empty(), "spec.data.dir", "required for dataset fashion-mnist");
  }
  if (d.uneven.enabled) {
    c.check(!d.dropLast, "spec.data.dropLast",
            "cannot be true with spec.data.uneven.enabled (uneven mode neither pads nor drops)");
    c.check(s.join.enabled, "spec.data.uneven.enabled",
            "requires spec.join.enabled: true (ranks with fewer batches would otherwise leave "
            "the others waiting in a collective)");
    if (!d.uneven.counts.empty()) {
      c.check(static_cast<int>(d.uneven.counts.size()) == s.workers.count, "spec.data.uneven.counts",
              "needs one entry per worker (" + std::to_string(s.workers.count) + "), got " +
                  std::to_string(d.uneven.counts.size()));
      c.check(s.workers.min == s.workers.max, "spec.data.uneven.counts",
              "cannot be combined with elastic workers (min != max)");
    }
  } else {
    c.check(d.uneven.counts.empty(), "spec.data.uneven.counts",
            "only valid when spec.data.uneven.enabled is true");
  }
  checkSamplesPerRank(s, c);
}

// A user's dataset (idx, npy, csv): the files each format needs, and standardize's shape. What
// the files hold is checked at submission when the controller sees them (controller/jobs/
// data_checks.h) and by the worker before the first step.
void checkUserData(const JobSpec& s, Checker& c) {
  const DataSpec& d = s.data;
  const bool npy = d.dataset == DatasetKind::kNpy;
  if (d.dataset != DatasetKind::kIdx && !npy && d.dataset != DatasetKind::kCsv) return;
  const std::string kind = datasetKindName(d.dataset);
  if (npy) {
    c.check(!d.train.features.empty(), "spec.data.train.features", "required for dataset npy");
    c.check(!d.train.targets.empty(), "spec.data.train.targets", "required for dataset npy");
    if (!d.val.empty()) {
      c.check(!d.val.features.empty(), "spec.data.val.features", "required with spec.data.val.targets");
      c.check(!d.val.targets.empty(), "spec.data.val.targets", "required with spec.data.val.features");
    }
  } else {
    c.check(!d.train.path.empty(), "spec.data.train.path",
            "required for dataset " + kind + (d.dataset == DatasetKind::kIdx ? " (the IDX directory)" : " (the file)"));
    if (!d.val.empty()) c.check(!d.val.path.empty(), "spec.data.val.path", "required when spec.data.val is given");
  }
  if (d.dataset == DatasetKind::kCsv) c.check(!d.target.empty(), "spec.data.target", "required for dataset csv (the label column)");
  c.check(d.classes != 1, "spec.data.classes", "must be 0 (from the labels) or >= 2");
  const StandardizeSpec& st = d.standardize;
  const std::string p = "spec.data.standardize.";
  if (st.automatic) {
    c.check(st.mean.empty() && st.std.empty(), p + "auto", "cannot be combined with mean and std (given statistics)");
    return;
  }
  c.check(st.mean.empty() == st.std.empty(), st.mean.empty() ? p + "mean" : p + "std",
          "required with spec.data.standardize." + std::string(st.mean.empty() ? "std" : "mean"));
  if (!st.mean.empty() && !st.std.empty()) {
    c.check(st.mean.size() == st.std.size(), p + "std",
            "has " + std::to_string(st.std.size()) + " values, mean has " + std::to_string(st.mean.size()));
  }
  for (size_t i = 0; i < st.std.size(); ++i) {
    c.check(st.std[i] > 0, p + "std[" + std::to_string(i) + "]", "must be > 0 (got " + num(st.std[i]) + ")");
  }
}

void checkSchedule(const OptimizerSpec& o, bool lrOk, Checker& c) {
  const ScheduleSpec& sch = o.schedule;
  const std::string p = "spec.optimizer.schedule.";
  const bool gamma = c.finite(sch.gamma, p + "gamma");
  const bool minLr = c.finite(sch.minLr, p + "minLr");
  if (sch.type == ScheduleType::kStep && gamma) {
    c.check(sch.gamma > 0 && sch.gamma <= 1, p + "gamma", "must be in (0, 1]");
  }
  if (sch.type == ScheduleType::kCosine && minLr && lrOk) {
    c.check(sch.minLr >= 0 && sch.minLr < o.lr, p + "minLr", "must be in [0, lr) (lr is " + num(o.lr) + ")");
  }
}

void checkOptimizer(const JobSpec& s, Checker& c) {
  const OptimizerSpec& o = s.optimizer;
  const std::string p = "spec.optimizer.";
  const auto single = Precision::kSingle;  // the worker's optimizers compute in f32
  // lr, weightDecay and maxGradNorm: the field table's checks (job_spec_field_checks.cc).
  const bool lr = std::isfinite(o.lr) && o.lr > 0;
  const bool momentum = c.finite(o.momentum, p + "momentum", single);
  const bool dampening = c.finite(o.dampening, p + "dampening", single);
  const bool beta1 = c.finite(o.beta1, p + "betas[0]", single);
  const bool beta2 = c.finite(o.beta2, p + "betas[1]", single);
  const bool eps = c.finite(o.eps, p + "eps", single);
  if (o.type == OptimizerType::kSgd) {
    if (momentum) c.check(o.momentum >= 0 && o.momentum < 1, p + "momentum", "must be in [0, 1)");
    if (dampening) c.check(o.dampening >= 0 && o.dampening <= 1, p + "dampening", "must be in [0, 1]");
    if (o.nesterov && momentum && dampening) {
      c.check(o.momentum > 0 && o.dampening == 0, p + "nesterov", "requires momentum > 0 and dampening 0");
    }
  } else {
    const std::string only =
        std::string("only valid for type sgd (type is ") + optimizerTypeName(o.type) + ")";
    if (momentum) c.check(o.momentum == 0, p + "momentum", only);
    if (dampening) c.check(o.dampening == 0, p + "dampening", only);
    c.check(!o.nesterov, p + "nesterov", only);
    if (beta1) c.check(o.beta1 >= 0 && o.beta1 < 1, p + "betas[0]", "must be in [0, 1)");
    if (beta2) c.check(o.beta2 >= 0 && o.beta2 < 1, p + "betas[1]", "must be in [0, 1)");
    if (eps) c.check(o.eps > 0, p + "eps", "must be > 0");
  }
  checkSchedule(o, lr, c);
}

void checkPowerSgd(const PowerSgdSpec& p, Checker& c) {
  const std::string path = "spec.commHook.powerSGD.";
  if (p.startIter >= 1 && (p.errorFeedback || p.warmStart)) {
    c.check(p.startIter > 1, path + "startIter",
            std::string("must be > 1 when ") + (p.errorFeedback ? "errorFeedback" : "warmStart") +
                " is on (buckets are rebuilt after iteration 1)");
  }
}

// The reducer's bucket sizes, in MB: at least one byte (the bucket plan refuses an empty one).
void checkBucketMb(double mb, const std::string& path, Checker& c) {
  if (!c.finite(mb, path) || !c.check(mb > 0, path, "must be > 0")) return;
  c.check(mb * kBytesPerMb >= 1, path, "must be at least one byte (" + num(1 / kBytesPerMb) + " MB)");
  c.check(mb <= kMaxBucketMb, path,
          "must be <= " + std::to_string(static_cast<int64_t>(kMaxBucketMb)) + " (1 TiB)");
}

void checkCommunication(const JobSpec& s, Checker& c) {
  const CommHookSpec& h = s.commHook;
  c.check(h.type != CommHookType::kNoop, "spec.commHook.type",
          "noop is for debugging only and refused in a job: it leaves gradients unreduced, so "
          "the replicas drift apart and the results are wrong by design (use allreduce)");
  if (s.zero == ZeroMode::kDfa) {
    c.check(s.optimizer.type != OptimizerType::kSgd, "spec.zero",
            "dfa (DistributedFusedAdam) needs optimizer type adam or adamw, got sgd");
    c.check(h.type == CommHookType::kAllreduce && h.wrapper == HookWrapper::kNone, "spec.commHook.type",
            std::string(commHookTypeName(h.type)) +
                " cannot be combined with zero: dfa, which reduce-scatters gradients itself "
                "(use type allreduce and no wrapper)");
    c.check(!s.join.enabled, "spec.join.enabled", "is not supported with zero: dfa");
  }
  if (isPowerSgd(h.type)) checkPowerSgd(h.powerSGD, c);
  if (h.wrapper != HookWrapper::kNone) {
    c.check(isPowerSgd(h.type) || h.type == CommHookType::kAllreduce, "spec.commHook.wrapper",
            std::string("applies to allreduce, powerSGD or batchedPowerSGD, not ") +
                commHookTypeName(h.type));
  }
  c.check(!(s.join.throwOnEarlyTermination && !s.join.enabled), "spec.join.throwOnEarlyTermination",
          "only valid when spec.join.enabled is true");
  const bool accumulation = s.gradientAccumulationSteps >= 1;  // else the field table reports it
  if (s.join.enabled) {
    c.check(s.data.uneven.enabled, "spec.join.enabled",
            "needs spec.data.uneven.enabled: true (Join is for uneven inputs; even inputs need no Join)");
    c.check(!accumulation || s.gradientAccumulationSteps == 1, "spec.join.enabled",
            "cannot be combined with spec.gradientAccumulation.steps > 1 (got " +
                std::to_string(s.gradientAccumulationSteps) +
                "): Join shadows whole synchronised steps, not no_sync micro-batches");
  }
  if (s.mixedPrecision != MixedPrecision::kNone) {
    const std::string mp = mixedPrecisionName(s.mixedPrecision);
    // Mixed precision is the DDP reducer's reduce dtype; DistributedFusedAdam has no reducer.
    c.check(s.zero != ZeroMode::kDfa, "spec.mixedPrecision",
            mp + " cannot be combined with zero: dfa (DistributedFusedAdam reduces f32 gradients "
                 "itself, without the DDP reducer)");
    c.check(!s.gradientAsBucketView, "spec.mixedPrecision",
            mp + " cannot be combined with spec.gradientAsBucketView: true (the half-precision "
                 "buckets cannot hold the f32 gradients)");
  }
  checkBucketMb(s.bucketCapMb, "spec.bucketCapMb", c);
  checkBucketMb(s.firstBucketMb, "spec.firstBucketMb", c);
}

// What the CUDA path cannot do (TrainerConfig::validateDevice; Note [CUDA training]).
void checkDevice(const JobSpec& s, Checker& c) {
  if (s.device != JobDevice::kCuda) return;
  const std::string with = " is not supported with spec.device: cuda (";
  c.check(s.zero != ZeroMode::kZero1, "spec.zero",
          "zero1" + with + "ZeroRedundancyOptimizer packs and broadcasts its shards through host "
          "buffers; use zero: none)");
  c.check(s.zero != ZeroMode::kDfa, "spec.zero",
          "dfa" + with + "DistributedFusedAdam keeps its gradient buckets and Adam state in host "
          "memory; use zero: none)");
  c.check(!s.join.enabled, "spec.join.enabled",
          "Join" + with + "Join and the DDP joinable shadow collectives on CPU parameters only)");
  c.check(!isPowerSgd(s.commHook.type), "spec.commHook.type",
          std::string(commHookTypeName(s.commHook.type)) + with +
              "the PowerSGD hooks keep P, Q and the error feedback in host memory; use allreduce, "
              "fp16 or bf16)");
}

void checkRun(const JobSpec& s, Checker& c) {
  if (s.epochs > 0 && s.steps > 0) {
    c.check(false, "spec.steps", "set either spec.epochs or spec.steps, not both");
  }
  if (s.epochs == 0 && s.steps == 0) {
    c.check(false, "spec.epochs", "one of spec.epochs or spec.steps is required (> 0)");
  }
  if (s.checkpoint.everySteps > 0) {
    c.check(!s.checkpoint.dir.empty(), "spec.checkpoint.dir", "required when everySteps > 0");
  }
  constexpr uint64_t kMaxSeed = static_cast<uint64_t>(INT64_MAX);
  c.check(s.seed <= kMaxSeed, "spec.seed", "must be < 2^63");
  c.check(s.commHook.powerSGD.seed <= kMaxSeed, "spec.commHook.powerSGD.seed", "must be < 2^63");
}

// heartbeatSeconds x heartbeatMisses < hangSeconds < collectiveSeconds (TimeoutsSpec), when
// each of them is valid on its own (the field table checks each one's range: job_spec_fields.cc).
// spec.worker.command: a program to run, no empty argument (a NUL would cut it short).
void checkWorkerProgram(const WorkerProgramSpec& w, Checker& c) {
  for (size_t i = 0; i < w.command.size(); ++i) {
    const std::string path = "spec.worker.command[" + std::to_string(i) + "]";
    if (i == 0) c.check(!w.command[0].empty(), path, "must name the worker program (a path)");
    c.check(w.command[i].find('\0') == std::string::npos, path, "must not contain a NUL character");
  }
}

void checkTimeouts(const TimeoutsSpec& t, Checker& c) {
  const std::string p = "spec.timeouts.";
  auto valid = [](double v, double min) { return std::isfinite(v) && v >= min && v <= kMaxTimeoutSeconds; };
  const bool heartbeat = valid(t.heartbeatSeconds, kMinHeartbeatSeconds);
  const bool misses = t.heartbeatMisses >= 1 && t.heartbeatMisses <= kMaxHeartbeatMisses;
  const bool hang = valid(t.hangSeconds, kMinTimeoutSeconds);
  const bool collective = valid(t.collectiveSeconds, kMinTimeoutSeconds);
  const std::string rule =
      " (the rule: heartbeatSeconds x heartbeatMisses < hangSeconds < collectiveSeconds)";
  if (heartbeat && misses && hang) {
    const double lost = t.heartbeatSeconds * t.heartbeatMisses;
    c.check(lost < t.hangSeconds, p + "hangSeconds",
            "must be > spec.timeouts.heartbeatSeconds x spec.timeouts.heartbeatMisses (" +
                num(t.hangSeconds) + " <= " + num(t.heartbeatSeconds) + " x " +
                std::to_string(t.heartbeatMisses) + " = " + num(lost) +
                "): otherwise the healthy peers of a lost worker, waiting for it in a collective, "
                "count as hung before it is declared lost, and the wrong rank is blamed" + rule);
  }
  if (hang && collective) {
    c.check(t.hangSeconds < t.collectiveSeconds, p + "collectiveSeconds",
            "must be > spec.timeouts.hangSeconds (" + num(t.collectiveSeconds) + " <= " +
                num(t.hangSeconds) + "): otherwise healthy ranks time out of their collective "
                "before the hung rank is found, and the wrong rank is blamed" + rule);
  }
}

}  // namespace

Status JobSpec::validate(std::vector<SpecError>* errors) const {
  std::vector<SpecError> local;
  std::vector<SpecError>& errs = errors ? *errors : local;
  const size_t before = errs.size();
  Checker c(&errs);
  checkDocument(*this, c);
  checkJobSpecFields(*this, &errs);
  checkWorkers(*this, c);
  checkModel(*this, c);
  validateModelStack(*this, &errs);
  checkLanguageModel(*this, c);
  checkData(*this, c);
  checkUserData(*this, c);
  checkOptimizer(*this, c);
  checkCommunication(*this, c);
  checkDevice(*this, c);
  checkRun(*this, c);
  checkTimeouts(timeouts, c);
  checkWorkerProgram(worker, c);
  validateKubernetesSpec(*this, &errs);
  validatePodTemplate(*this, &errs);
  validatePodSecurityLevel(*this, &errs);
  if (errs.size() == before) return Status::ok();
  return specErrorsToStatus(std::vector<SpecError>(errs.begin() + before, errs.end()));
}

}  // namespace ddp
