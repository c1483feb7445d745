#pragma once
// BatchedPowerSgdHook: PyTorch's batched_powerSGD_hook. The whole bucket (n elements) is one
// square matrix of side ceil(sqrt(n)), zero-padded, compressed at rank min(side, rank): fewer,
// larger products than PowerSgdHook (faster, less accurate: the matrix mixes layers). Same
// error feedback, warm start, start iteration and statistics; the options' minCompressionRate
// and batchTensorsWithSameShape do not apply.
//
// Per bucket, from the start iteration on (before it: divide by world and allreduce): M += e;
// S = M viewed as side x side, zero-padded; orthogonalise Q; P = S Q; allreduce P;
// orthogonalise P; Q = S^T P; allreduce Q (in flight). finish(): Q /= world; S~ = P Q^T
// replaces the bucket; e = M - S~. Collectives per bucket: allreduce(P), allreduce(Q).
//
// Note [Square view]
// The square is never materialised: its first n / side rows are the bucket itself (row-major),
// the partial row is copied into a padded scratch row, and the all-padding rows contribute zero
// rows of P. So a step costs the same memory passes as PowerSgdHook's, with no side^2 copy.
//
// State (Note [PowerSGD state keys]): Q per bucket identity (it only means something for one
// layout); error feedback per tensor key. Unlike PyTorch, the padding's error is not carried
// (padding stays zero), so the error survives a change of bucket layout.
//
// Thread model: see PowerSgdHookBase.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "worker/ddp/powersgd_hook_base.h"

namespace ddp {

class BatchedPowerSgdHook final : public PowerSgdHookBase {
 public:
  static constexpr const char* kName = "batched_powersgd";

  BatchedPowerSgdHook(comm::Backend& backend, PowerSgdOptions options = {});
  // As the constructor, but InvalidArgument for invalid options.
  static Result<std::unique_ptr<BatchedPowerSgdHook>> create(comm::Backend& backend, PowerSgdOptions options);

  ~BatchedPowerSgdHook() override;

  Result<HookResult> run(GradBucket& bucket) override;

  // ceil(sqrt(n)).
  static uint64_t squareSide(uint64_t n);

 private:
  struct BucketPlan;

  // Rows of the square view per block of Note [Row blocks of the square view].
  static size_t blockRows(size_t side);
  // fn(slice, lo, hi) for each slice's part [lo, hi) of the bucket's element range [begin, end).
  template <typename Fn>
  static void forEachSlicePart(const BucketPlan& plan, size_t begin, size_t end, Fn&& fn);

  void clearPlans() override;
  Status finishBucket(BucketPlan* plan, float* base, bool isLast);

  std::map<uint64_t, std::unique_ptr<BucketPlan>> plans_;  // by bucket identity; guarded by mu_
};

}  // namespace ddp
