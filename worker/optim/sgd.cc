#include "worker/optim/sgd.h"

#include "kernels/optim_ops.h"

namespace ddp::optim {

Sgd::Sgd(std::vector<Parameter*> params, OptimizerConfig config) : Optimizer(std::move(params), config) {
  DDP_CHECK(config_.kind == OptimizerKind::kSgd);
}

Status Sgd::applyUpdate(const std::vector<size_t>& indices, float gradScale) {
  const bool momentum = config_.slotsPerElement() > 0;
  std::vector<kernels::SgdTensor> ts;
  ts.reserve(indices.size());
  for (size_t i : indices) {
    Parameter* p = params_[i];
    kernels::SgdTensor t;
    t.param = static_cast<float*>(p->data);
    t.grad = static_cast<const float*>(p->grad);
    t.momentumBuf = momentum ? slot(i, 0) : nullptr;
    t.n = p->numel();
    t.firstStep = states_[i].step == 0;
    ts.push_back(t);
  }
  if (onCuda()) return kernels::sgdStepCuda(ts, config_.sgdHyper(), gradScale);
  kernels::sgdStepCpu(ts, config_.sgdHyper(), gradScale);
  return Status::ok();
}

}  // namespace ddp::optim
