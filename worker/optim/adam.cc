#include "worker/optim/adam.h"

#include "kernels/optim_ops.h"

namespace ddp::optim {

Adam::Adam(std::vector<Parameter*> params, OptimizerConfig config) : Optimizer(std::move(params), config) {
  DDP_CHECK(config_.kind == OptimizerKind::kAdam || config_.kind == OptimizerKind::kAdamW);
}

Status Adam::applyUpdate(const std::vector<size_t>& indices, float gradScale) {
  std::vector<kernels::AdamTensor> ts;
  ts.reserve(indices.size());
  for (size_t i : indices) {
    Parameter* p = params_[i];
    kernels::AdamTensor t;
    t.param = static_cast<float*>(p->data);
    t.grad = static_cast<const float*>(p->grad);
    t.expAvg = slot(i, 0);
    t.expAvgSq = slot(i, 1);
    t.n = p->numel();
    t.step = states_[i].step + 1;
    ts.push_back(t);
  }
  if (onCuda()) return kernels::adamStepCuda(ts, config_.adamHyper(), gradScale);
  kernels::adamStepCpu(ts, config_.adamHyper(), gradScale);
  return Status::ok();
}

}  // namespace ddp::optim
