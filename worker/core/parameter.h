#pragma once
// Parameter: one trainable tensor as the engine sees it. Models own the storage; the reducer,
// optimizers and checkpoints hold pointers to Parameters and never own them.
//
// Gradient contract (see Note [Gradient pointer] in docs/ARCHITECTURE.md):
//  - `grad` points at numel() elements of `dtype` on `device`, written by the model's backward.
//  - The model reads `grad` afresh every backward (never caches it): the reducer may rebind it
//    into its bucket buffer (gradient-as-bucket-view), copying the current contents first.
//  - While rebound, `ownGrad` keeps the model's own storage; the reducer that goes away copies
//    the current gradient into it and points `grad` back there (a parameter registered with a
//    null grad gets null back, its values dropped).
//  - Backward accumulates into or overwrites `grad` as the model documents; zeroGrad() clears it.
// Thread model: none; a Parameter is touched by the training thread (and by the reducer's hook
// only through bucket copies while backward goes on).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace ddp {

struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  Device device = Device::cpu();
  void* data = nullptr;
  void* grad = nullptr;
  // The model's own gradient storage while `grad` points into a Reducer's bucket
  // (gradientAsBucketView); null otherwise. Written only by the Reducer.
  void* ownGrad = nullptr;

  size_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), size_t{1},
                           [](size_t a, int64_t b) { return a * static_cast<size_t>(b); });
  }
  size_t bytes() const { return numel() * dtypeSize(dtype); }
};

// Called by a model's backward when the gradient of parameter `index` (its position in the
// model's parameters() list) is final for this step. Layers call it in reverse order.
using GradReadyFn = std::function<void(size_t index)>;

}  // namespace ddp
