#pragma once
// Built-in comm hooks (PyTorch's default_hooks): every one but noop leaves the AVERAGE over
// ranks in the bucket.
//  - AllreduceHook: allreduce(avg); an f16 bucket: divide by world, allreduce(sum).
//  - CompressHook (fp16_compress / bf16_compress): cast to half while dividing by world,
//    allreduce the half buffer (the backend accumulates in f32), cast back in finish.
//  - HalfWrapperHook (fp16_wrapper / bf16_wrapper): casts the bucket to half, runs any inner
//    hook on a half bucket (same index, parameters and identity), casts the result back.
//  - NoopHook: does nothing (debugging only: gradients are NOT reduced, results wrong by design).
// Thread model (worker/ddp/comm_hook.h): run() and finish() on the reducer's comm thread only;
// per-bucket scratch buffers are keyed by bucket index (several buckets are in flight at once).

#include <memory>
#include <string>
#include <unordered_map>

#include "kernels/flat_buffer.h"
#include "worker/comm/backend.h"
#include "worker/ddp/comm_hook.h"

namespace ddp {

class AllreduceHook final : public CommHook {
 public:
  explicit AllreduceHook(comm::Backend& backend) : backend_(backend) {}
  std::string name() const override { return "allreduce"; }
  Result<HookResult> run(GradBucket& bucket) override;

 private:
  comm::Backend& backend_;
};

// Per-bucket half-precision scratch (reallocated when a bucket's size or device changes, e.g.
// after the bucket rebuild).
class HalfScratch {
 public:
  explicit HalfScratch(DType dtype) : dtype_(dtype) {}
  Result<comm::BufferView> get(const GradBucket& bucket);
  DType dtype() const { return dtype_; }

 private:
  DType dtype_;
  std::unordered_map<size_t, kernels::FlatBuffer> buffers_;
};

class CompressHook final : public CommHook {
 public:
  // `half` is DType::kF16 or DType::kBF16.
  CompressHook(comm::Backend& backend, DType half) : backend_(backend), scratch_(half) {}
  std::string name() const override;
  Result<HookResult> run(GradBucket& bucket) override;

 private:
  comm::Backend& backend_;
  HalfScratch scratch_;
};

class HalfWrapperHook final : public CommHook {
 public:
  HalfWrapperHook(std::unique_ptr<CommHook> inner, DType half) : inner_(std::move(inner)), scratch_(half) {}
  std::string name() const override;
  Result<HookResult> run(GradBucket& bucket) override;
  CommHook& inner() { return *inner_; }
  // The inner hook's state is the wrapper's state.
  bool hasState() const override { return inner_->hasState(); }
  Result<std::string> saveState() const override { return inner_->saveState(); }
  Status loadState(std::string_view state) override { return inner_->loadState(state); }

 private:
  std::unique_ptr<CommHook> inner_;
  HalfScratch scratch_;
  std::unordered_map<size_t, std::unique_ptr<GradBucket>> halfBuckets_;
};

class NoopHook final : public CommHook {
 public:
  std::string name() const override { return "noop"; }
  Result<HookResult> run(GradBucket&) override { return HookResult{}; }
};

// Factories by the names PyTorch users know.
std::unique_ptr<CommHook> makeAllreduceHook(comm::Backend& backend);
std::unique_ptr<CommHook> makeFp16CompressHook(comm::Backend& backend);
std::unique_ptr<CommHook> makeBf16CompressHook(comm::Backend& backend);
std::unique_ptr<CommHook> makeFp16Wrapper(std::unique_ptr<CommHook> inner);
std::unique_ptr<CommHook> makeBf16Wrapper(std::unique_ptr<CommHook> inner);
std::unique_ptr<CommHook> makeNoopHook();

}  // namespace ddp
