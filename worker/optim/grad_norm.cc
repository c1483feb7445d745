#include "worker/optim/grad_norm.h"

#include <cmath>
#include <string>

#include "kernels/optim_ops.h"

namespace ddp::optim {

#if DDP_WITH_CUDA
Status setCudaDevice(int index);  // optimizer_cuda.cc
#endif

Result<double> globalGradNorm(const std::vector<Parameter*>& params) {
  double sq = 0;
  for (const Parameter* p : params) {
    if (p->grad == nullptr) continue;
    if (p->dtype != DType::kF32) {
      return invalidArgument("gradient norm: parameter " + p->name + " is " + dtypeName(p->dtype) + ", only f32 is supported");
    }
    const float* g = static_cast<const float*>(p->grad);
    if (p->device.isCpu()) {
      sq += kernels::sumSquaresCpu(g, p->numel());
      continue;
    }
#if DDP_WITH_CUDA
    DDP_RETURN_IF_ERROR(setCudaDevice(p->device.index).withContext("gradient norm"));
#endif
    auto s = kernels::sumSquaresCuda(g, p->numel());
    if (!s.isOk()) return s.status().withContext("gradient norm of " + p->name + " on " + p->device.toString());
    sq += *s;
  }
  return std::sqrt(sq);
}

float clipCoefficient(double norm, double maxNorm) {
  if (maxNorm <= 0 || !(norm > maxNorm)) return 1.f;
  return static_cast<float>(maxNorm / (norm + 1e-6));
}

}  // namespace ddp::optim
