#include "worker/optim/sgd.h"

#include "kernels/optim_ops.h"

namespace ddp::optim {

Sgd::Sgd(std::vector<Parameter*> params, OptimizerConfig config) : Optimizer(std::move(params), config) {
  DDP_CHECK(config_.kind == OptimizerKind::kSgd);
}

void Sgd::applyUpdate(const std::vector<size_t>& indices, float gradScale) {
  std::vector<kernels::SgdTensor> ts;
  ts.reserve(indices.size());
  for (size_t i : indices) {
    Parameter* p = params_[i];
    ParamState& s = states_[i];
    kernels::SgdTensor t;
    t.param = static_cast<float*>(p->data);
    t.grad = static_cast<const float*>(p->grad);
    t.momentumBuf = s.slots.empty() ? nullptr : s.slots[0].data();
    t.n = p->numel();
    t.firstStep = s.step == 0;
    ts.push_back(t);
  }
  kernels::sgdStepCpu(ts, config_.sgdHyper(), gradScale);
}

}  // namespace ddp::optim
