#include "worker/optim/distributed_fused_adam.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/log.h"
#include "kernels/optim_ops.h"
#include "worker/optim/grad_norm.h"

namespace ddp::optim {

Status DistributedFusedAdamOptions::validate() const {
  DDP_RETURN_IF_ERROR(config.validate());
  if (config.kind == OptimizerKind::kSgd) return invalidArgument("DistributedFusedAdam: config.kind must be adam or adamw");
  if (bucketCapBytes < sizeof(float)) return invalidArgument("DistributedFusedAdam: bucketCapBytes must be >= 4");
  if (maxBucketsInFlight < 1) return invalidArgument("DistributedFusedAdam: maxBucketsInFlight must be >= 1");
  if (!(maxGradNorm >= 0.f)) return invalidArgument("DistributedFusedAdam: maxGradNorm must be >= 0");
  if (stateChunkBytes < sizeof(float)) return invalidArgument("DistributedFusedAdam: stateChunkBytes must be >= 4");
  return Status::ok();
}

Result<std::unique_ptr<DistributedFusedAdam>> DistributedFusedAdam::create(std::vector<Parameter*> params,
                                                                           comm::Backend& pg,
                                                                           DistributedFusedAdamOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  std::vector<size_t> numels;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter* p = params[i];
    if (p == nullptr) return invalidArgument("DistributedFusedAdam: parameter " + std::to_string(i) + " is null");
    if (p->dtype != DType::kF32) return invalidArgument("DistributedFusedAdam: parameter " + p->name + " is not f32");
    if (!p->device.isCpu()) {
      return unimplemented("DistributedFusedAdam: parameter " + p->name + " is on " + p->device.toString() +
                           "; only CPU parameters are supported");
    }
    numels.push_back(p->numel());
  }
  if (!options.weightDecayMask.empty() && options.weightDecayMask.size() != params.size()) {
    return invalidArgument("DistributedFusedAdam: weight decay mask has " +
                           std::to_string(options.weightDecayMask.size()) + " entries, the model has " +
                           std::to_string(params.size()) + " parameters");
  }
  DfaLayout layout = planDfaLayout(numels, pg.size(), options.bucketCapBytes / sizeof(float));
  return std::unique_ptr<DistributedFusedAdam>(
      new DistributedFusedAdam(std::move(params), pg, std::move(options), std::move(layout)));
}

DistributedFusedAdam::DistributedFusedAdam(std::vector<Parameter*> params, comm::Backend& pg,
                                           DistributedFusedAdamOptions options, DfaLayout layout)
    : params_(std::move(params)), pg_(pg), options_(std::move(options)), layout_(std::move(layout)),
      rank_(pg.rank()), world_(pg.size()) {
  const size_t nb = layout_.buckets.size();
  full_.resize(nb);
  scratch_.resize(nb);
  gradShard_.resize(nb);
  expAvg_.resize(nb);
  expAvgSq_.resize(nb);
  for (size_t b = 0; b < nb; ++b) {
    const DfaBucket& bk = layout_.buckets[b];
    full_[b].assign(bk.paddedElems(), 0.f);
    scratch_[b].assign(bk.shardElems, 0.f);
    gradShard_[b].assign(bk.shardElems, 0.f);
    expAvg_[b].assign(bk.shardElems, 0.f);
    expAvgSq_[b].assign(bk.shardElems, 0.f);
  }
  readyCount_.assign(nb, 0);
  paramReady_.assign(params_.size(), false);
  if (!options_.weightDecayMask.empty()) {
    for (const DfaBucket& bk : layout_.buckets) decayRuns_.push_back(dfaDecayRuns(bk, rank_, options_.weightDecayMask));
  }
}

DistributedFusedAdam::~DistributedFusedAdam() {
  // Buffers must outlive the collectives that use them.
  for (auto& f : inFlight_) {
    if (!f.work->isCompleted()) (void)f.work->wait();
  }
}

GradReadyFn DistributedFusedAdam::gradReadyFn() {
  return [this](size_t index) { markGradReady(index); };
}

void DistributedFusedAdam::markGradReady(size_t index) {
  if (index >= params_.size() || paramReady_[index]) {
    if (pendingError_.isOk()) {
      pendingError_ = index >= params_.size()
                          ? outOfRange("DistributedFusedAdam: grad ready for parameter " + std::to_string(index) +
                                       " of " + std::to_string(params_.size()))
                          : failedPrecondition("DistributedFusedAdam: parameter " + params_[index]->name +
                                               " marked ready twice in one backward");
    }
    return;
  }
  backwardActive_ = true;
  paramReady_[index] = true;
  copyGradIntoBucket(index);
  ++readyCount_[layout_.bucketOf[index]];
  launchReadyBuckets();
}

void DistributedFusedAdam::copyGradIntoBucket(size_t index) {
  const Parameter* p = params_[index];
  float* dst = full_[layout_.bucketOf[index]].data() + layout_.offsetOf[index];
  if (p->grad) {
    std::memcpy(dst, p->grad, p->bytes());
  } else {
    std::memset(dst, 0, p->bytes());
  }
}

void DistributedFusedAdam::launchReadyBuckets() {
  while (nextToLaunch_ < layout_.buckets.size() &&
         readyCount_[nextToLaunch_] == layout_.buckets[nextToLaunch_].params.size()) {
    launch(nextToLaunch_++);
  }
}

void DistributedFusedAdam::launch(size_t bucket) {
  while (static_cast<int>(inFlight_.size()) >= options_.maxBucketsInFlight) {
    Status st = completeOldest(Deadline::after(pg_.defaultTimeout()));
    if (!st.isOk() && pendingError_.isOk()) pendingError_ = st;
  }
  const DfaBucket& bk = layout_.buckets[bucket];
  // The first backward since the last step reduces straight into the gradient shard; later
  // ones (accumulation) go through scratch and are added in completeOldest().
  float* out = accumulated_ == 0 ? gradShard_[bucket].data() : scratch_[bucket].data();
  comm::WorkPtr w = pg_.reduceScatter(comm::viewOf(full_[bucket].data(), bk.paddedElems()),
                                      comm::viewOf(out, bk.shardElems), comm::ReduceOp::kSum);
  inFlight_.push_back({bucket, std::move(w)});
}

Status DistributedFusedAdam::completeOldest(Deadline deadline) {
  InFlight f = std::move(inFlight_.front());
  inFlight_.pop_front();
  Status st = f.work->wait(deadline);
  if (!st.isOk()) {
    if (!f.work->isCompleted()) (void)f.work->wait();
    return st.withContext("DistributedFusedAdam reduce-scatter of bucket " + std::to_string(f.bucket));
  }
  if (accumulated_ > 0) {
    float* acc = gradShard_[f.bucket].data();
    const float* in = scratch_[f.bucket].data();
    for (size_t i = 0, n = scratch_[f.bucket].size(); i < n; ++i) acc[i] += in[i];
  }
  return Status::ok();
}

Status DistributedFusedAdam::finishBackward(Deadline deadline) {
  Status result = pendingError_;
  pendingError_ = Status::ok();
  if (backwardActive_ || accumulated_ == 0) {
    if (result.isOk()) {
      // Parameters never marked ready (unused, or a model without grad-ready calls): read now.
      for (size_t i = 0; i < params_.size(); ++i) {
        if (paramReady_[i]) continue;
        paramReady_[i] = true;
        copyGradIntoBucket(i);
        ++readyCount_[layout_.bucketOf[i]];
      }
      launchReadyBuckets();
    }
    while (!inFlight_.empty()) {
      Status st = completeOldest(deadline);
      if (!st.isOk() && result.isOk()) result = st;
    }
    std::fill(paramReady_.begin(), paramReady_.end(), false);
    std::fill(readyCount_.begin(), readyCount_.end(), 0);
    nextToLaunch_ = 0;
    backwardActive_ = false;
    if (result.isOk()) ++accumulated_;
  }
  return result;
}

Status DistributedFusedAdam::computeNorm(Deadline deadline, double* norm) {
  double local = 0;
  for (const auto& g : gradShard_) local += kernels::sumSquaresCpu(g.data(), g.size());
  DDP_RETURN_IF_ERROR(pg_.allreduce(comm::viewOf(&local, 1), comm::ReduceOp::kSum)
                          ->wait(deadline)
                          .withContext("DistributedFusedAdam grad-norm allreduce"));
  *norm = std::sqrt(local) / world_;  // the shards hold the sum over ranks
  return Status::ok();
}

Result<double> DistributedFusedAdam::gradNorm(Deadline deadline) {
  DDP_RETURN_IF_ERROR(finishBackward(deadline));
  double norm = 0;
  DDP_RETURN_IF_ERROR(computeNorm(deadline, &norm));
  return norm;
}

Status DistributedFusedAdam::step(Deadline deadline) {
  DDP_RETURN_IF_ERROR(finishBackward(deadline));
  DDP_RETURN_IF_ERROR(computeNorm(deadline, &lastGradNorm_));
  float gradScale = 1.f / static_cast<float>(world_);
  if (options_.maxGradNorm > 0.f) gradScale *= clipCoefficient(lastGradNorm_, options_.maxGradNorm);
  // Per bucket: pack this rank's slice of the parameters into the shard buffer (padding stays
  // zero), run the fused Adam on it and launch its all-gather at once, so the all-gather of
  // bucket b overlaps the update of bucket b + 1.
  ++step_;
  accumulated_ = 0;
  const size_t nb = layout_.buckets.size();
  std::vector<comm::WorkPtr> works;
  works.reserve(nb);
  for (size_t b = 0; b < nb; ++b) {
    const DfaBucket& bk = layout_.buckets[b];
    float* shard = scratch_[b].data();
    std::memset(shard, 0, bk.shardElems * sizeof(float));
    const size_t lo = static_cast<size_t>(rank_) * bk.shardElems, hi = lo + bk.shardElems;
    for (size_t k = 0; k < bk.params.size(); ++k) {
      const size_t o = bk.offsets[k], n = params_[bk.params[k]]->numel();
      const size_t s = std::max(o, lo), e = std::min(o + n, hi);
      if (s >= e) continue;
      std::memcpy(shard + (s - lo), static_cast<const float*>(params_[bk.params[k]]->data) + (s - o),
                  (e - s) * sizeof(float));
    }
    updateShard(b, gradScale);
    works.push_back(pg_.allgather(comm::viewOf(shard, bk.shardElems), comm::viewOf(full_[b].data(), full_[b].size())));
  }
  return unpackParameters(works, deadline);
}

void DistributedFusedAdam::updateShard(size_t b, float gradScale) {
  const kernels::AdamHyper hyper = options_.config.adamHyper();
  float* p = scratch_[b].data();
  const float* g = gradShard_[b].data();
  float* m = expAvg_[b].data();
  float* v = expAvgSq_[b].data();
  if (decayRuns_.empty() || hyper.weightDecay == 0.f) {
    kernels::adamStepCpu({{p, g, m, v, layout_.buckets[b].shardElems, step_}}, hyper, gradScale);
    return;
  }
  std::vector<kernels::AdamTensor> decayed, plain;
  for (const DfaDecayRun& r : decayRuns_[b]) {
    (r.decay ? decayed : plain).push_back({p + r.offset, g + r.offset, m + r.offset, v + r.offset, r.count, step_});
  }
  if (!decayed.empty()) kernels::adamStepCpu(decayed, hyper, gradScale);
  kernels::AdamHyper noDecay = hyper;
  noDecay.weightDecay = 0.f;
  if (!plain.empty()) kernels::adamStepCpu(plain, noDecay, gradScale);
}

Status DistributedFusedAdam::unpackParameters(std::vector<comm::WorkPtr>& works, Deadline deadline) {
  Status result;
  for (size_t b = 0; b < works.size(); ++b) {
    Status st = works[b]->wait(deadline);
    if (!st.isOk()) {
      if (!works[b]->isCompleted()) (void)works[b]->wait();
      if (result.isOk()) result = st.withContext("DistributedFusedAdam parameter all-gather of bucket " + std::to_string(b));
      continue;
    }
    const DfaBucket& bk = layout_.buckets[b];
    for (size_t k = 0; k < bk.params.size(); ++k) {
      Parameter* p = params_[bk.params[k]];
      if (p->bytes() > 0) std::memcpy(p->data, full_[b].data() + bk.offsets[k], p->bytes());
    }
  }
  return result;
}

size_t DistributedFusedAdam::stateBytes() const {
  size_t n = 0;
  for (size_t b = 0; b < expAvg_.size(); ++b) n += (expAvg_[b].size() + expAvgSq_[b].size()) * sizeof(float);
  return n;
}

}  // namespace ddp::optim
