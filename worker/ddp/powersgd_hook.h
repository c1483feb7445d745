#pragma once
// PowerSgdHook: layer-wise PowerSGD (Vogels et al. 2019), PyTorch's powerSGD_hook semantics with
// per-tensor state keys (Note [PowerSGD state keys]). docs/POWERSGD.md has the options, the state
// format and an example.
//
// Per bucket, from the start iteration on (before it: divide by world and allreduce):
//  1. each gradient is viewed as shape[0] x rest; it is compressed when it passes the rate test
//     (n + m) * r * rate < n * m with r = min(n, m, rank); 1-D tensors never pass;
//  2. the uncompressed gradients are packed and allreduced (they come back exact: no error);
//  3. Q (warm start: last step's Q, else seeded random) is orthogonalised; with error feedback
//     last step's error is added to each compressed gradient (M += e) in the same pass as
//     P = M Q (kernels/powersgd_ops.h addErrorAndComputeP); allreduce P;
//  4. P is orthogonalised (Gram-Schmidt), Q = M^T P, allreduce Q (returned in flight);
//  finish(): Q /= world, M~ = P Q^T replaces the gradient, e = M - M~ is kept, the uncompressed
//  gradients are unpacked divided by world, and the last bucket advances the iteration.
// Collectives per compressed bucket: allreduce(uncompressed) if any, allreduce(P), allreduce(Q),
// in that order on every rank (Note [Hook ordering]).
//
// Thread model: see PowerSgdHookBase.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "worker/ddp/powersgd_hook_base.h"

namespace ddp {

class PowerSgdHook final : public PowerSgdHookBase {
 public:
  static constexpr const char* kName = "powersgd";

  PowerSgdHook(comm::Backend& backend, PowerSgdOptions options = {});
  // As the constructor, but InvalidArgument for invalid options.
  static Result<std::unique_ptr<PowerSgdHook>> create(comm::Backend& backend, PowerSgdOptions options);

  ~PowerSgdHook() override;

  Result<HookResult> run(GradBucket& bucket) override;

  // Whether an n x m matrix is compressed at approximation rank r (r already min(n, m, rank)).
  static bool shouldCompress(uint64_t n, uint64_t m, uint64_t r, double minCompressionRate);

 private:
  struct TensorPlan;
  struct Batch;
  struct BucketPlan;

  void clearPlans() override;
  Result<BucketPlan*> planFor(const GradBucket& bucket);
  Status finishBucket(BucketPlan* plan, float* base, bool isLast);

  // Per-layout plans and scratch, keyed by bucket identity; guarded by mu_ (map structure only:
  // a plan is used by one bucket in flight at a time).
  std::map<uint64_t, std::unique_ptr<BucketPlan>> plans_;
};

}  // namespace ddp
