#include "worker/optim/optimizer_in_backward.h"

#include <cstring>

namespace ddp::optim {

Result<std::unique_ptr<OptimizerInBackward>> OptimizerInBackward::create(Reducer& reducer,
                                                                         const OptimizerConfig& config,
                                                                         bool zeroGradAfterStep) {
  DDP_ASSIGN_OR_RETURN(auto opt, makeOptimizer(config, reducer.parameters()));
  std::unique_ptr<OptimizerInBackward> out(new OptimizerInBackward(reducer, std::move(opt), zeroGradAfterStep));
  OptimizerInBackward* self = out.get();
  DDP_RETURN_IF_ERROR(reducer.setBucketReducedCallback([self](GradBucket& b) { self->onBucketReduced(b); }));
  return out;
}

OptimizerInBackward::OptimizerInBackward(Reducer& reducer, std::unique_ptr<Optimizer> optimizer,
                                         bool zeroGradAfterStep)
    : reducer_(reducer), optimizer_(std::move(optimizer)), zeroGradAfterStep_(zeroGradAfterStep) {
  const auto& ps = reducer_.parameters();
  for (size_t i = 0; i < ps.size(); ++i) indexOf_[ps[i]] = i;
}

OptimizerInBackward::~OptimizerInBackward() {
  // Unregister so the reducer never calls into a destroyed object (between steps only).
  (void)reducer_.setBucketReducedCallback({});
}

void OptimizerInBackward::onBucketReduced(GradBucket& bucket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.isOk()) return;
  }
  std::vector<size_t> idx;
  idx.reserve(bucket.parameters().size());
  for (const Parameter* p : bucket.parameters()) {
    auto it = indexOf_.find(p);
    if (it == indexOf_.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = internalError("OptimizerInBackward: bucket " + std::to_string(bucket.index()) +
                             " holds parameter " + p->name + " unknown to the optimizer");
      return;
    }
    idx.push_back(it->second);
  }
  Status st = optimizer_->stepParameters(idx);
  if (!st.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = st.withContext("OptimizerInBackward bucket " + std::to_string(bucket.index()));
    return;
  }
  if (zeroGradAfterStep_) {
    for (const Parameter* p : bucket.parameters()) {
      if (p->grad) std::memset(p->grad, 0, p->bytes());
    }
  }
}

Status OptimizerInBackward::takeError() {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = error_;
  error_ = Status::ok();
  return st;
}

}  // namespace ddp::optim
