#pragma once
// Sgd: stochastic gradient descent with momentum, dampening, nesterov and L2 weight decay
// (torch.optim.SGD semantics; the rule is in kernels/optim_ops.h).
// Thread model: as Optimizer.

#include "worker/optim/optimizer.h"

namespace ddp::optim {

class Sgd final : public Optimizer {
 public:
  // Prefer makeOptimizer(), which validates. `config.kind` must be kSgd.
  Sgd(std::vector<Parameter*> params, OptimizerConfig config);

 protected:
  Status applyUpdate(const std::vector<size_t>& indices, float gradScale) override;
};

}  // namespace ddp::optim
