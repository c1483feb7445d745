#include "worker/optim/adam.h"

#include "kernels/optim_ops.h"

namespace ddp::optim {

Adam::Adam(std::vector<Parameter*> params, OptimizerConfig config) : Optimizer(std::move(params), config) {
  DDP_CHECK(config_.kind == OptimizerKind::kAdam || config_.kind == OptimizerKind::kAdamW);
}

void Adam::applyUpdate(const std::vector<size_t>& indices, float gradScale) {
  std::vector<kernels::AdamTensor> ts;
  ts.reserve(indices.size());
  for (size_t i : indices) {
    Parameter* p = params_[i];
    ParamState& s = states_[i];
    kernels::AdamTensor t;
    t.param = static_cast<float*>(p->data);
    t.grad = static_cast<const float*>(p->grad);
    t.expAvg = s.slots[0].data();
    t.expAvgSq = s.slots[1].data();
    t.n = p->numel();
    t.step = s.step + 1;
    ts.push_back(t);
  }
  kernels::adamStepCpu(ts, config_.adamHyper(), gradScale);
}

}  // namespace ddp::optim
