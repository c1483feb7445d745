#pragma once
// OptimizerInBackward: runs the optimizer (SGD, Adam, AdamW) on each DDP bucket as soon as the
// reducer has finished reducing it, instead of one step() after backward. The update then
// overlaps with the reduction of the remaining buckets and the rest of backward.
//
// It registers the Reducer's bucket-reduced callback (worker/ddp/reducer.h): on synced steps,
// in bucket order, on the reducer's comm thread, after the bucket's averaged gradients were
// written back into Parameter::grad. The callback steps exactly that bucket's parameters; as the
// step count is per parameter, the result equals finalize() followed by Optimizer::step()
// (bitwise on the CPU: same kernel, same inputs). no_sync steps update nothing; the synced step
// that follows steps on the accumulated sum, as the separate path would.
//
// zeroGradAfterStep: the bucket's gradients are zeroed right after its update, so the training
// loop needs no zeroGrad() and a model can recycle gradient memory early. (The model owns the
// gradient storage, so "released" means cleared, not freed.)
//
// Errors: the callback cannot return a Status; the first error is kept and returned by
// takeError() (and the remaining buckets of that step are skipped).
// Thread model: the callback runs on the reducer's comm thread while the training thread is in
// backward/finalize; the training thread may call optimizer()/takeError() only between steps.
// The error is guarded by mu_.

#include <memory>
#include <mutex>
#include <unordered_map>

#include "worker/ddp/reducer.h"
#include "worker/optim/optimizer.h"

namespace ddp::optim {

class OptimizerInBackward {
 public:
  // Builds the optimizer over reducer.parameters() and registers the callback (between steps).
  static Result<std::unique_ptr<OptimizerInBackward>> create(Reducer& reducer, const OptimizerConfig& config,
                                                             bool zeroGradAfterStep = false);
  ~OptimizerInBackward();

  Optimizer& optimizer() { return *optimizer_; }
  // The first error raised inside a callback since the last call (ok if none), and clears it.
  Status takeError();

 private:
  OptimizerInBackward(Reducer& reducer, std::unique_ptr<Optimizer> optimizer, bool zeroGradAfterStep);
  void onBucketReduced(GradBucket& bucket);

  Reducer& reducer_;
  std::unique_ptr<Optimizer> optimizer_;
  const bool zeroGradAfterStep_;
  std::unordered_map<const Parameter*, size_t> indexOf_;
  std::mutex mu_;
  Status error_;  // guarded by mu_
};

}  // namespace ddp::optim
