#include "worker/ddp/reducer.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>
#include <utility>

#include "common/fnv1a.h"
#include "common/log.h"
#include "common/thread_priority.h"
#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"
#include "worker/ddp/replica_sync.h"

namespace ddp {
namespace {

comm::BufferView gradOf(const Parameter* p) { return {p->grad, p->numel(), p->dtype, p->device}; }

std::string paramLabel(const std::vector<Parameter*>& params, size_t i) {
  return "parameter " + std::to_string(i) + " ('" + params[i]->name + "')";
}

// FNV-1a over the bucket's parameter names, shapes and dtypes (common/fnv1a.h); shapes and dtypes
// go in as whole words, one round each. PowerSGD checkpoints key their bucket state by it.
uint64_t bucketIdentity(const std::vector<Parameter*>& params, const BucketSpec& spec) {
  uint64_t h = kFnv1aOffsetBasis;
  for (size_t idx : spec.params) {
    h = fnv1aRound(fnv1a(params[idx]->name, h), 0xff);
    for (int64_t d : params[idx]->shape) h = fnv1aRound(h, static_cast<uint64_t>(d));
    h = fnv1aRound(h, static_cast<uint64_t>(params[idx]->dtype) + 0x100);
  }
  return h;
}

}  // namespace

Status ReducerOptions::validate() const {
  const BucketPlanOptions planOptions{bucketCapBytes, firstBucketCapBytes};
  DDP_RETURN_IF_ERROR(planOptions.validate());
  if (reduceDtype && !kernels::isFloatingDType(*reduceDtype)) {
    return invalidArgument(std::string("ReducerOptions.reduceDtype: ") + dtypeName(*reduceDtype) +
                           " is not a floating dtype");
  }
  if (reduceDtype && gradientAsBucketView) {
    return invalidArgument("ReducerOptions: reduceDtype (mixed precision) needs separate buckets; it cannot be "
                           "combined with gradientAsBucketView");
  }
  if (timeout <= Duration::zero()) return invalidArgument("ReducerOptions.timeout must be > 0");
  return Status::ok();
}

Reducer::Reducer(comm::Backend& backend, std::vector<Parameter*> params, ReducerOptions options)
    : backend_(backend), params_(std::move(params)), options_(std::move(options)), sync_(std::make_shared<Sync>()),
      ready_(params_.size(), false), usedSinceSync_(params_.size(), false) {}

Result<std::unique_ptr<Reducer>> Reducer::create(comm::Backend& backend, std::vector<Parameter*> params,
                                                 ReducerOptions options, std::vector<comm::BufferView> buffers) {
  DDP_RETURN_IF_ERROR(options.validate());
  std::unordered_set<const Parameter*> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter* p = params[i];
    if (p == nullptr) return invalidArgument("Reducer: parameter " + std::to_string(i) + " is null");
    if (!seen.insert(p).second) return invalidArgument("Reducer: " + paramLabel(params, i) + " registered twice");
    if (!kernels::isFloatingDType(p->dtype)) {
      return invalidArgument("Reducer: " + paramLabel(params, i) + " has dtype " + dtypeName(p->dtype) +
                             " (gradients need f32, f64, f16 or bf16)");
    }
    if (p->numel() > 0 && (p->data == nullptr || (p->grad == nullptr && !options.gradientAsBucketView))) {
      return invalidArgument("Reducer: " + paramLabel(params, i) + " has null data or grad");
    }
    if (!backend.supportsDevice(p->device.type)) {
      return invalidArgument("Reducer: " + paramLabel(params, i) + " is on " + p->device.toString() +
                             ", which backend '" + backend.name() + "' does not support");
    }
  }
  const Deadline deadline = Deadline::after(options.timeout);
  DDP_RETURN_IF_ERROR(verifyParameterSignatures(backend, params, deadline));
  if (options.broadcastAtStart) {
    std::vector<comm::BufferView> views;
    for (const Parameter* p : params) views.push_back({p->data, p->numel(), p->dtype, p->device});
    views.insert(views.end(), buffers.begin(), buffers.end());
    DDP_RETURN_IF_ERROR(broadcastFrom(backend, views, 0, deadline));
  }
  std::unique_ptr<Reducer> r(new Reducer(backend, std::move(params), std::move(options)));
  // The model's storage: grad itself, unless an earlier, still living Reducer has rebound it.
  std::vector<void*> ownGrads;
  for (const Parameter* p : r->params_) ownGrads.push_back(p->ownGrad != nullptr ? p->ownGrad : p->grad);
  DDP_RETURN_IF_ERROR(r->buildBuckets(BucketPlan::reverseOrder(r->params_.size())));
  if (r->options_.gradientAsBucketView) {
    for (size_t i = 0; i < r->params_.size(); ++i) r->params_[i]->ownGrad = ownGrads[i];
  }
  // CPU training only: with CUDA parameters the hooks may wait on the GPU in spinning
  // synchronisations, which must not run at real-time priority (Note [Comm thread priority]).
  bool cpuOnly = true;
  for (const Parameter* p : r->params_) cpuOnly = cpuOnly && p->device.isCpu();
  r->commThread_ = std::thread([raw = r.get(), cpuOnly, priority = r->options_.commThreadPriority] {
    setThreadName("ddp-reducer");
    if (cpuOnly) (void)applyCommThreadPriority(priority);
    raw->commLoop();
  });
  return r;
}

void Reducer::stopCommThread() {
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    sync_->stop = true;
  }
  sync_->cv.notify_all();
  if (commThread_.joinable()) commThread_.join();
}

Reducer::~Reducer() {
  stopCommThread();
  // Only now, with the comm thread gone, does nothing write the buckets any more.
  if (options_.gradientAsBucketView) returnGradStorage();
}

void Reducer::returnGradStorage() {
  if (buckets_.empty()) return;  // create() failed before rebinding anything
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter* p = params_[i];
    const comm::BufferView slot = buckets_[plan_.bucketOf(i)].views[plan_.positionOf(i)];
    if (p->grad != slot.data) {
      // A later Reducer rebound it. If it took this bucket for the model's storage (the
      // parameter came with a null grad), that storage is about to go: leave it nothing.
      if (p->ownGrad == slot.data) p->ownGrad = nullptr;
      continue;
    }
    if (p->ownGrad != nullptr && p->numel() > 0) {
      const comm::BufferView own{p->ownGrad, p->numel(), p->dtype, p->device};
      Status st = kernels::copyFlat(comm::flat(own), comm::flat(slot));
      if (!st.isOk()) DDP_LOG(Warning) << "~Reducer: gradient of " << paramLabel(params_, i) << " lost: " << st;
    }
    p->grad = p->ownGrad;
    p->ownGrad = nullptr;
  }
}

Status Reducer::buildBuckets(const std::vector<size_t>& order) {
  std::vector<ParamLayout> layouts;
  layouts.reserve(params_.size());
  for (const Parameter* p : params_) layouts.push_back({p->numel(), p->dtype, p->device});
  DDP_ASSIGN_OR_RETURN(BucketPlan plan,
                       BucketPlan::compute(layouts, order, {options_.bucketCapBytes, options_.firstBucketCapBytes}));
  std::vector<Bucket> buckets(plan.numBuckets());
  for (size_t b = 0; b < plan.numBuckets(); ++b) {
    const BucketSpec& spec = plan.buckets()[b];
    Bucket& bk = buckets[b];
    bk.dtype = options_.reduceDtype.value_or(spec.dtype);
    DDP_ASSIGN_OR_RETURN(bk.storage, kernels::FlatBuffer::allocate(spec.numel, bk.dtype, spec.device));
    const comm::BufferView whole{bk.storage.data(), spec.numel, bk.dtype, spec.device};
    std::vector<Parameter*> members;
    for (size_t k = 0; k < spec.params.size(); ++k) {
      Parameter* p = params_[spec.params[k]];
      bk.views.push_back(whole.slice(spec.offsets[k], p->numel()));
      members.push_back(p);
    }
    bk.grad = std::make_unique<GradBucket>(b, b + 1 == plan.numBuckets(), whole, bk.views, members,
                                           bucketIdentity(params_, spec));
    bk.pending = spec.params.size();
  }
  if (options_.gradientAsBucketView) {
    // Note: the old grad storage (model-owned or the previous bucket) is read before the swap,
    // and nothing is rebound until every copy succeeded (a failure leaves no grad dangling).
    for (size_t i = 0; i < params_.size(); ++i) {
      Parameter* p = params_[i];
      const comm::BufferView slot = buckets[plan.bucketOf(i)].views[plan.positionOf(i)];
      if (p->grad != nullptr && p->numel() > 0) {
        DDP_RETURN_IF_ERROR(kernels::castScaled(comm::flat(slot), comm::flat(gradOf(p)), 1.0));
      }
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      params_[i]->grad = buckets[plan.bucketOf(i)].views[plan.positionOf(i)].data;
    }
  }
  plan_ = std::move(plan);
  buckets_ = std::move(buckets);
  return Status::ok();
}

Status Reducer::registerCommHook(std::unique_ptr<CommHook> hook) {
  if (hook == nullptr) return invalidArgument("registerCommHook: null hook");
  if (hook_ != nullptr) {
    return alreadyExists("registerCommHook: a comm hook ('" + hook_->name() + "') is already registered; '" +
                         hook->name() + "' rejected");
  }
  if (stepActive_ || syncedSteps_ + noSyncSteps_ + shadowSteps_ > 0) {
    return failedPrecondition("registerCommHook('" + hook->name() + "'): register hooks before the first step");
  }
  hook_ = std::move(hook);
  return Status::ok();
}

Status Reducer::setBucketReducedCallback(std::function<void(GradBucket&)> callback) {
  if (stepActive_) return failedPrecondition("setBucketReducedCallback: not during a step");
  bucketCallback_ = std::move(callback);
  return Status::ok();
}

Status Reducer::setNoSync(bool noSync) {
  if (stepActive_ && noSync != noSync_) {
    return failedPrecondition(std::string("setNoSync(") + (noSync ? "true" : "false") +
                              ") during a step: change it between finalize() and the next backward");
  }
  noSync_ = noSync;
  return Status::ok();
}

Status Reducer::brokenStatus() const {
  return broken_.withContext("Reducer unusable after an earlier failure (recreate it)");
}

double Reducer::packScale() const { return hook_ ? 1.0 : 1.0 / static_cast<double>(backend_.size()); }

Status Reducer::packParam(size_t i) {
  Parameter* p = params_[i];
  const comm::BufferView slot = buckets_[plan_.bucketOf(i)].views[plan_.positionOf(i)];
  const double scale = packScale();
  if (options_.gradientAsBucketView) {
    if (p->grad != slot.data) {
      return failedPrecondition(paramLabel(params_, i) + ": Parameter::grad no longer points into its bucket "
                                "(gradientAsBucketView: the model must not rebind grad)");
    }
    return kernels::scaleInPlace(comm::flat(slot), scale);
  }
  return kernels::castScaled(comm::flat(slot), comm::flat(gradOf(p)), scale);
}

void Reducer::launchReadyBuckets() {
  bool pushed = false;
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    while (nextLaunch_ < buckets_.size() && buckets_[nextLaunch_].ready) {
      sync_->queue.push_back(nextLaunch_++);
      pushed = true;
    }
  }
  if (pushed) sync_->cv.notify_all();
}

Status Reducer::markGradReady(size_t index) {
  if (!broken_.isOk()) return brokenStatus();
  Status st;
  if (index >= params_.size()) {
    st = invalidArgument("markGradReady(" + std::to_string(index) + "): only " + std::to_string(params_.size()) +
                         " parameters registered");
  } else if (ready_[index]) {
    st = failedPrecondition("markGradReady: gradient of " + paramLabel(params_, index) +
                            " marked ready twice in one step");
  }
  if (st.isOk()) {
    stepActive_ = true;
    ready_[index] = true;
    ++readyCount_;
    usedSinceSync_[index] = true;
    if (noSync_) return Status::ok();
    if (options_.rebuildBuckets && !rebuilt_) readyOrder_.push_back(index);
    st = packParam(index);
    if (st.isOk()) {
      Bucket& bk = buckets_[plan_.bucketOf(index)];
      if (--bk.pending == 0) {
        bk.ready = true;
        launchReadyBuckets();
      }
      return Status::ok();
    }
  }
  stepActive_ = true;
  if (stepError_.isOk()) stepError_ = st;
  return st;
}

GradReadyFn Reducer::gradReadyFn() {
  return [this](size_t index) { (void)markGradReady(index); };  // errors surface in finalize()
}

Status Reducer::waitForBuckets(Deadline deadline, const char* what) {
  std::unique_lock<std::mutex> lock(sync_->mu);
  const size_t target = nextLaunch_;
  const bool finished = sync_->cv.wait_until(lock, deadline.at(), [&] { return sync_->done >= target; });
  if (!sync_->error.isOk()) return sync_->error;
  if (!finished) {
    return timeoutError(std::string(what) + ": " + std::to_string(target - sync_->done) + " of " +
                        std::to_string(target) + " buckets still being reduced at the deadline (first: bucket " +
                        std::to_string(sync_->done) + ")");
  }
  return Status::ok();
}

void Reducer::resetStep() {
  stepActive_ = false;
  nextLaunch_ = 0;
  readyCount_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = plan_.buckets()[b].params.size();
    buckets_[b].ready = false;
  }
  std::lock_guard<std::mutex> lock(sync_->mu);
  sync_->done = 0;
  sync_->shadow = false;
  stepError_ = Status::ok();
}

Status Reducer::finalize(Deadline deadline) {
  if (!broken_.isOk()) return brokenStatus();
  if (!stepError_.isOk()) {
    Status st = stepError_;
    (void)waitForBuckets(deadline, "finalize after a failed markGradReady");
    broken_ = st;
    return st;
  }
  if (noSync_) {
    ++noSyncSteps_;
    resetStep();
    return Status::ok();
  }
  if (readyCount_ < params_.size()) {
    if (!options_.findUnusedParameters) {
      std::string names;
      size_t listed = 0;
      for (size_t i = 0; i < params_.size() && listed < 3; ++i) {
        if (!ready_[i]) names += (listed++ ? ", " : "") + paramLabel(params_, i);
      }
      Status st = failedPrecondition(
          "finalize before all buckets are ready: " + std::to_string(params_.size() - readyCount_) + " of " +
          std::to_string(params_.size()) + " gradients not marked ready (" + names +
          (params_.size() - readyCount_ > listed ? ", ..." : "") +
          "); mark every gradient, or set findUnusedParameters if some get none");
      (void)waitForBuckets(deadline, "finalize with missing gradients");
      broken_ = st;
      return st;
    }
    // Unused parameters: reduce what no_sync steps accumulated for them, else zero.
    for (size_t i = 0; i < params_.size(); ++i) {
      if (ready_[i]) continue;
      Status st = usedSinceSync_[i]
                      ? packParam(i)
                      : kernels::fillZero(comm::flat(buckets_[plan_.bucketOf(i)].views[plan_.positionOf(i)]));
      if (!st.isOk()) {
        broken_ = st.withContext("finalize: unused " + paramLabel(params_, i));
        return broken_;
      }
      ready_[i] = true;
      ++readyCount_;
      Bucket& bk = buckets_[plan_.bucketOf(i)];
      if (--bk.pending == 0) bk.ready = true;
    }
    launchReadyBuckets();
  }
  Status st = waitForBuckets(deadline, "finalize");
  if (!st.isOk()) {
    broken_ = st;
    return st;
  }
  ++syncedSteps_;
  resetStep();
  std::fill(usedSinceSync_.begin(), usedSinceSync_.end(), false);
  return rebuildIfDue(deadline);
}

Status Reducer::runShadowStep(Deadline deadline) {
  if (!broken_.isOk()) return brokenStatus();
  if (stepActive_) return failedPrecondition("runShadowStep: a step is in progress (call finalize first)");
  if (noSync_) return failedPrecondition("runShadowStep: no_sync is set (a shadow step shadows a synced step)");
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    sync_->shadow = true;
  }
  stepActive_ = true;
  for (auto& bk : buckets_) {
    Status st = kernels::fillZero(comm::flat(bk.grad->buffer()));
    if (!st.isOk()) {
      broken_ = st.withContext("runShadowStep");
      return broken_;
    }
    bk.ready = true;
  }
  launchReadyBuckets();
  Status st = waitForBuckets(deadline, "runShadowStep");
  if (!st.isOk()) {
    broken_ = st;
    return st;
  }
  ++shadowSteps_;
  resetStep();
  std::fill(usedSinceSync_.begin(), usedSinceSync_.end(), false);
  return rebuildIfDue(deadline);
}

Status Reducer::rebuildIfDue(Deadline deadline) {
  if (!options_.rebuildBuckets || rebuilt_) return Status::ok();
  rebuilt_ = true;
  const size_t n = params_.size();
  if (n == 0) return Status::ok();
  // Rank 0's observed order, completed with parameters it never saw (unused ones, or all of them
  // after a shadow step) in the current plan's order.
  std::vector<int64_t> order;
  std::vector<bool> seen(n, false);
  for (size_t i : readyOrder_) {
    if (!seen[i]) {
      seen[i] = true;
      order.push_back(static_cast<int64_t>(i));
    }
  }
  for (size_t i : plan_.flatOrder()) {
    if (!seen[i]) order.push_back(static_cast<int64_t>(i));
  }
  readyOrder_.clear();
  Status st = runStaged(
      backend_, stagingDevice(params_), {comm::viewOf(order.data(), order.size())},
      [&](const std::vector<comm::BufferView>& v) { return backend_.broadcast(v[0], 0, {deadline.remaining()}); },
      deadline);
  if (!st.isOk()) {
    broken_ = st.withContext("bucket rebuild");
    return broken_;
  }
  std::vector<size_t> newOrder(order.begin(), order.end());
  if (newOrder == plan_.flatOrder()) return Status::ok();
  st = buildBuckets(newOrder);
  if (!st.isOk()) broken_ = st.withContext("bucket rebuild");
  return st;
}

comm::BufferView Reducer::bucketBuffer(size_t b) const { return buckets_.at(b).grad->buffer(); }

ReducerStats Reducer::stats() const {
  ReducerStats s;
  s.syncedSteps = syncedSteps_;
  s.noSyncSteps = noSyncSteps_;
  s.shadowSteps = shadowSteps_;
  std::lock_guard<std::mutex> lock(sync_->mu);
  s.hookSeconds = hookSeconds_;
  s.hookCpuSeconds = hookCpuSeconds_;
  s.bucketsReduced = bucketsReduced_;
  return s;
}

}  // namespace ddp
