#pragma once
// Adam and AdamW (torch.optim.Adam / AdamW semantics: bias correction, eps outside the square
// root, L2 weight decay for Adam, decoupled weight decay for AdamW; kernels/optim_ops.h).
// `config.kind` selects kAdam or kAdamW. Slot 0 is exp_avg, slot 1 exp_avg_sq.
// Thread model: as Optimizer.

#include "worker/optim/optimizer.h"

namespace ddp::optim {

class Adam final : public Optimizer {
 public:
  // Prefer makeOptimizer(), which validates. `config.kind` must be kAdam or kAdamW.
  Adam(std::vector<Parameter*> params, OptimizerConfig config);

 protected:
  Status applyUpdate(const std::vector<size_t>& indices, float gradScale) override;
};

}  // namespace ddp::optim
