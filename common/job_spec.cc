#include "common/job_spec.h"

#include <cmath>
#include <cstdint>
#include <sstream>

namespace ddp {

const char* jobDeviceName(JobDevice v) { return v == JobDevice::kCuda ? "cuda" : "cpu"; }
const char* modelTypeName(ModelType v) { return v == ModelType::kCnn ? "cnn" : "mlp"; }
const char* datasetKindName(DatasetKind v) {
  return v == DatasetKind::kSynthetic ? "synthetic" : "fashion-mnist";
}
const char* optimizerTypeName(OptimizerType v) {
  switch (v) {
    case OptimizerType::kSgd: return "sgd";
    case OptimizerType::kAdam: return "adam";
    case OptimizerType::kAdamW: return "adamw";
  }
  return "?";
}
const char* scheduleTypeName(ScheduleType v) {
  switch (v) {
    case ScheduleType::kConstant: return "constant";
    case ScheduleType::kStep: return "step";
    case ScheduleType::kCosine: return "cosine";
  }
  return "?";
}
const char* zeroModeName(ZeroMode v) {
  switch (v) {
    case ZeroMode::kNone: return "none";
    case ZeroMode::kZero1: return "zero1";
    case ZeroMode::kDfa: return "dfa";
  }
  return "?";
}
const char* commHookTypeName(CommHookType v) {
  switch (v) {
    case CommHookType::kAllreduce: return "allreduce";
    case CommHookType::kFp16: return "fp16";
    case CommHookType::kBf16: return "bf16";
    case CommHookType::kPowerSgd: return "powerSGD";
    case CommHookType::kBatchedPowerSgd: return "batchedPowerSGD";
    case CommHookType::kNoop: return "noop";
  }
  return "?";
}
const char* hookWrapperName(HookWrapper v) {
  switch (v) {
    case HookWrapper::kNone: return "none";
    case HookWrapper::kFp16: return "fp16";
    case HookWrapper::kBf16: return "bf16";
  }
  return "?";
}
const char* mixedPrecisionName(MixedPrecision v) {
  switch (v) {
    case MixedPrecision::kNone: return "none";
    case MixedPrecision::kFp16: return "fp16";
    case MixedPrecision::kBf16: return "bf16";
  }
  return "?";
}
const char* jobLogFormatName(JobLogFormat v) { return v == JobLogFormat::kJson ? "json" : "text"; }

std::string SpecError::toString() const {
  std::ostringstream os;
  os << (path.empty() ? "(document)" : path);
  if (line > 0) os << " (line " << line << ", column " << column << ")";
  os << ": " << message;
  return os.str();
}

namespace {

// Collects errors with a terse API: check(cond, path, message).
class Checker {
 public:
  explicit Checker(std::vector<SpecError>* out) : out_(out) {}
  void check(bool ok, const std::string& path, const std::string& message) {
    if (!ok) out_->push_back({path, message});
  }

 private:
  std::vector<SpecError>* out_;
};

bool isDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Status JobSpec::validate(std::vector<SpecError>* errors) const {
  std::vector<SpecError> local;
  std::vector<SpecError>& errs = errors ? *errors : local;
  const size_t before = errs.size();
  Checker c(&errs);

  c.check(apiVersion == kJobApiVersion, "apiVersion",
          std::string("must be ") + kJobApiVersion + ", got '" + apiVersion + "'");
  c.check(kind == kJobKind, "kind", std::string("must be ") + kJobKind + ", got '" + kind + "'");
  if (name.empty()) {
    c.check(false, "metadata.name", "required");
  } else {
    c.check(isDnsLabel(name), "metadata.name",
            "must be a DNS label: 1-63 characters of a-z, 0-9 and '-', starting and ending "
            "with a letter or digit (got '" + name + "')");
  }

  // Workers.
  c.check(workers.count >= 1, "spec.workers.count", "must be >= 1");
  c.check(workers.min >= 1, "spec.workers.min", "must be >= 1");
  c.check(workers.min <= workers.max, "spec.workers.min",
          "must be <= spec.workers.max (" + std::to_string(workers.min) + " > " +
              std::to_string(workers.max) + ")");
  c.check(workers.count >= workers.min && workers.count <= workers.max, "spec.workers.count",
          "must lie within [min, max] = [" + std::to_string(workers.min) + ", " +
              std::to_string(workers.max) + "]");
  c.check(threadsPerWorker >= 1 && threadsPerWorker <= 256, "spec.threadsPerWorker",
          "must be in [1, 256]");

  // Model.
  for (size_t i = 0; i < model.hidden.size(); ++i) {
    c.check(model.hidden[i] > 0, "spec.model.hidden[" + std::to_string(i) + "]", "must be > 0");
  }
  c.check(model.activation == "relu" || model.activation == "tanh" || model.activation == "gelu",
          "spec.model.activation", "must be one of relu, tanh, gelu (got '" + model.activation + "')");
  if (model.type == ModelType::kCnn) {
    c.check(!model.convChannels.empty(), "spec.model.convChannels", "must not be empty for a cnn");
    for (size_t i = 0; i < model.convChannels.size(); ++i) {
      c.check(model.convChannels[i] > 0, "spec.model.convChannels[" + std::to_string(i) + "]",
              "must be > 0");
    }
    c.check(model.kernelSize > 0 && model.kernelSize % 2 == 1, "spec.model.kernelSize",
            "must be odd and > 0");
    int64_t side = 28;
    if (data.dataset == DatasetKind::kSynthetic) {
      side = static_cast<int64_t>(std::llround(std::sqrt(double(data.synthetic.features))));
      c.check(side * side == data.synthetic.features, "spec.data.synthetic.features",
              "must be a square (e.g. 784 = 28x28) for model type cnn, which needs images");
    }
    c.check(side >> model.convChannels.size() >= 1, "spec.model.convChannels",
            std::to_string(model.convChannels.size()) + " conv blocks (each pools by 2) shrink a " +
                std::to_string(side) + "x" + std::to_string(side) + " image below 1x1");
  }

  // Data.
  c.check(data.batchSize >= 1, "spec.data.batchSize", "must be >= 1");
  c.check(data.limit >= 0, "spec.data.limit", "must be >= 0");
  if (data.dataset == DatasetKind::kSynthetic) {
    c.check(data.synthetic.samples >= 1, "spec.data.synthetic.samples", "must be >= 1");
    c.check(data.synthetic.features >= 1, "spec.data.synthetic.features", "must be >= 1");
    c.check(data.synthetic.classes >= 2, "spec.data.synthetic.classes", "must be >= 2");
    c.check(data.synthetic.separation >= 0, "spec.data.synthetic.separation", "must be >= 0");
    c.check(data.synthetic.noise >= 0, "spec.data.synthetic.noise", "must be >= 0");
  } else {
    c.check(!data.dir.empty(), "spec.data.dir", "required for dataset fashion-mnist");
  }
  if (data.uneven.enabled) {
    c.check(!data.dropLast, "spec.data.dropLast",
            "cannot be true with spec.data.uneven.enabled (uneven mode neither pads nor drops)");
    c.check(join.enabled, "spec.data.uneven.enabled",
            "requires spec.join.enabled: true (ranks with fewer batches would otherwise leave "
            "the others waiting in a collective)");
    if (!data.uneven.counts.empty()) {
      c.check(static_cast<int>(data.uneven.counts.size()) == workers.count,
              "spec.data.uneven.counts",
              "needs one entry per worker (" + std::to_string(workers.count) + "), got " +
                  std::to_string(data.uneven.counts.size()));
      c.check(workers.min == workers.max, "spec.data.uneven.counts",
              "cannot be combined with elastic workers (min != max)");
      for (size_t i = 0; i < data.uneven.counts.size(); ++i) {
        c.check(data.uneven.counts[i] >= 0, "spec.data.uneven.counts[" + std::to_string(i) + "]",
                "must be >= 0");
      }
    }
  } else {
    c.check(data.uneven.counts.empty(), "spec.data.uneven.counts",
            "only valid when spec.data.uneven.enabled is true");
  }

  // Optimizer.
  const OptimizerSpec& o = optimizer;
  c.check(o.lr > 0 && std::isfinite(o.lr), "spec.optimizer.lr", "must be > 0");
  c.check(o.weightDecay >= 0, "spec.optimizer.weightDecay", "must be >= 0");
  c.check(o.maxGradNorm >= 0, "spec.optimizer.maxGradNorm", "must be >= 0 (0: no clipping)");
  if (o.type == OptimizerType::kSgd) {
    c.check(o.momentum >= 0 && o.momentum < 1, "spec.optimizer.momentum", "must be in [0, 1)");
    c.check(o.dampening >= 0 && o.dampening <= 1, "spec.optimizer.dampening", "must be in [0, 1]");
    if (o.nesterov) {
      c.check(o.momentum > 0 && o.dampening == 0, "spec.optimizer.nesterov",
              "requires momentum > 0 and dampening 0");
    }
  } else {
    const std::string t = optimizerTypeName(o.type);
    c.check(o.momentum == 0, "spec.optimizer.momentum", "only valid for type sgd (type is " + t + ")");
    c.check(o.dampening == 0, "spec.optimizer.dampening", "only valid for type sgd (type is " + t + ")");
    c.check(!o.nesterov, "spec.optimizer.nesterov", "only valid for type sgd (type is " + t + ")");
    c.check(o.beta1 >= 0 && o.beta1 < 1, "spec.optimizer.betas[0]", "must be in [0, 1)");
    c.check(o.beta2 >= 0 && o.beta2 < 1, "spec.optimizer.betas[1]", "must be in [0, 1)");
    c.check(o.eps > 0, "spec.optimizer.eps", "must be > 0");
  }
  c.check(o.schedule.warmupSteps >= 0, "spec.optimizer.schedule.warmupSteps", "must be >= 0");
  if (o.schedule.type == ScheduleType::kStep) {
    c.check(o.schedule.stepSize >= 1, "spec.optimizer.schedule.stepSize", "must be >= 1");
    c.check(o.schedule.gamma > 0 && o.schedule.gamma <= 1, "spec.optimizer.schedule.gamma",
            "must be in (0, 1]");
  }
  if (o.schedule.type == ScheduleType::kCosine) {
    c.check(o.schedule.minLr >= 0 && o.schedule.minLr < o.lr, "spec.optimizer.schedule.minLr",
            "must be in [0, lr) (lr is " + num(o.lr) + ")");
  }

  // ZeRO and communication.
  const bool powerSgd = commHook.type == CommHookType::kPowerSgd ||
                        commHook.type == CommHookType::kBatchedPowerSgd;
  if (zero == ZeroMode::kDfa) {
    c.check(o.type != OptimizerType::kSgd, "spec.zero",
            "dfa (DistributedFusedAdam) needs optimizer type adam or adamw, got sgd");
    c.check(commHook.type == CommHookType::kAllreduce && commHook.wrapper == HookWrapper::kNone,
            "spec.commHook.type",
            std::string(commHookTypeName(commHook.type)) +
                " cannot be combined with zero: dfa, which reduce-scatters gradients itself "
                "(use type allreduce and no wrapper)");
    c.check(!join.enabled, "spec.join.enabled", "is not supported with zero: dfa");
  }
  const PowerSgdSpec& p = commHook.powerSGD;
  if (powerSgd) {
    c.check(p.rank >= 1, "spec.commHook.powerSGD.rank", "must be >= 1");
    c.check(p.startIter >= 1, "spec.commHook.powerSGD.startIter", "must be >= 1");
    if (p.startIter >= 1 && (p.errorFeedback || p.warmStart)) {
      c.check(p.startIter > 1, "spec.commHook.powerSGD.startIter",
              std::string("must be > 1 when ") + (p.errorFeedback ? "errorFeedback" : "warmStart") +
                  " is on (buckets are rebuilt after iteration 1)");
    }
    c.check(p.minCompressionRate > 0, "spec.commHook.powerSGD.minCompressionRate", "must be > 0");
    c.check(p.orthogonalizationEpsilon >= 0, "spec.commHook.powerSGD.orthogonalizationEpsilon",
            "must be >= 0");
  }
  if (commHook.wrapper != HookWrapper::kNone) {
    c.check(powerSgd || commHook.type == CommHookType::kAllreduce, "spec.commHook.wrapper",
            std::string("applies to allreduce, powerSGD or batchedPowerSGD, not ") +
                commHookTypeName(commHook.type));
  }
  c.check(!(join.throwOnEarlyTermination && !join.enabled), "spec.join.throwOnEarlyTermination",
          "only valid when spec.join.enabled is true");
  c.check(gradientAccumulationSteps >= 1, "spec.gradientAccumulation.steps", "must be >= 1");
  if (mixedPrecision != MixedPrecision::kNone) {
    // Mixed precision is the DDP reducer's reduce dtype; DistributedFusedAdam has no reducer.
    c.check(zero != ZeroMode::kDfa, "spec.mixedPrecision",
            std::string(mixedPrecisionName(mixedPrecision)) +
                " cannot be combined with zero: dfa (DistributedFusedAdam reduces f32 gradients "
                "itself, without the DDP reducer)");
  }

  // Length of the run.
  c.check(epochs >= 0, "spec.epochs", "must be >= 0");
  c.check(steps >= 0, "spec.steps", "must be >= 0");
  if (epochs > 0 && steps > 0) {
    c.check(false, "spec.steps", "set either spec.epochs or spec.steps, not both");
  }
  if (epochs == 0 && steps == 0) {
    c.check(false, "spec.epochs", "one of spec.epochs or spec.steps is required (> 0)");
  }

  c.check(checkpoint.everySteps >= 0, "spec.checkpoint.everySteps", "must be >= 0");
  c.check(checkpoint.keep >= 1, "spec.checkpoint.keep", "must be >= 1");
  if (checkpoint.everySteps > 0) {
    c.check(!checkpoint.dir.empty(), "spec.checkpoint.dir", "required when everySteps > 0");
  }
  constexpr uint64_t kMaxSeed = static_cast<uint64_t>(INT64_MAX);
  c.check(seed <= kMaxSeed, "spec.seed", "must be < 2^63");
  c.check(commHook.powerSGD.seed <= kMaxSeed, "spec.commHook.powerSGD.seed", "must be < 2^63");
  c.check(eval.batchSize >= 1, "spec.eval.batchSize", "must be >= 1");
  c.check(eval.limit >= 0, "spec.eval.limit", "must be >= 0");
  c.check(bucketCapMb > 0, "spec.bucketCapMb", "must be > 0");
  c.check(firstBucketMb > 0, "spec.firstBucketMb", "must be > 0");
  c.check(maxRestarts >= 0, "spec.maxRestarts", "must be >= 0");
  c.check(timeouts.collectiveSeconds > 0, "spec.timeouts.collectiveSeconds", "must be > 0");
  c.check(timeouts.rendezvousSeconds > 0, "spec.timeouts.rendezvousSeconds", "must be > 0");
  c.check(timeouts.heartbeatSeconds > 0, "spec.timeouts.heartbeatSeconds", "must be > 0");

  if (errs.size() == before) return Status::ok();
  return specErrorsToStatus(std::vector<SpecError>(errs.begin() + before, errs.end()));
}

Status specErrorsToStatus(const std::vector<SpecError>& errors) {
  if (errors.empty()) return Status::ok();
  std::ostringstream os;
  os << "invalid DDPJob: " << errors.size() << (errors.size() == 1 ? " error:" : " errors:");
  for (const SpecError& e : errors) os << "\n  " << e.toString();
  return invalidArgument(os.str());
}

}  // namespace ddp
