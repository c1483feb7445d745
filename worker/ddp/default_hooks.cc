#include "worker/ddp/default_hooks.h"

#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"

namespace ddp {
namespace {

const char* halfName(DType d) { return d == DType::kBF16 ? "bf16" : "fp16"; }

}  // namespace

Result<HookResult> AllreduceHook::run(GradBucket& bucket) {
  // The backend averages: Gloo's ring divides each reduced segment once, in cache, before the
  // allgather spreads it (a pass over 1/world of the bucket instead of all of it); NCCL uses
  // ncclAvg. An f16 bucket is divided first, as PyTorch's allreduce_hook does, so that its sum
  // cannot overflow.
  if (bucket.buffer().dtype != DType::kF16) {
    return HookResult{backend_.allreduce(bucket.buffer(), comm::ReduceOp::kAvg), {}};
  }
  DDP_RETURN_IF_ERROR(kernels::scaleInPlace(comm::flat(bucket.buffer()), 1.0 / backend_.size()));
  return HookResult{backend_.allreduce(bucket.buffer(), comm::ReduceOp::kSum), {}};
}

Result<comm::BufferView> HalfScratch::get(const GradBucket& bucket) {
  const comm::BufferView src = bucket.buffer();
  auto it = buffers_.find(bucket.index());
  if (it == buffers_.end() || it->second.count() != src.count || !(it->second.view().device == src.device)) {
    DDP_ASSIGN_OR_RETURN(kernels::FlatBuffer buf, kernels::FlatBuffer::allocate(src.count, dtype_, src.device));
    it = buffers_.insert_or_assign(bucket.index(), std::move(buf)).first;
  }
  const kernels::FlatView v = it->second.view();
  return comm::BufferView{v.data, v.count, v.dtype, v.device};
}

std::string CompressHook::name() const { return std::string(halfName(scratch_.dtype())) + "_compress"; }

Result<HookResult> CompressHook::run(GradBucket& bucket) {
  DDP_ASSIGN_OR_RETURN(comm::BufferView half, scratch_.get(bucket));
  const comm::BufferView full = bucket.buffer();
  DDP_RETURN_IF_ERROR(kernels::castScaled(comm::flat(half), comm::flat(full), 1.0 / backend_.size()));
  HookResult r;
  r.work = backend_.allreduce(half, comm::ReduceOp::kSum);
  r.finish = [half, full]() { return kernels::castScaled(comm::flat(full), comm::flat(half), 1.0); };
  return r;
}

std::string HalfWrapperHook::name() const {
  return std::string(halfName(scratch_.dtype())) + "_wrapper(" + inner_->name() + ")";
}

Result<HookResult> HalfWrapperHook::run(GradBucket& bucket) {
  DDP_ASSIGN_OR_RETURN(comm::BufferView half, scratch_.get(bucket));
  const comm::BufferView full = bucket.buffer();
  DDP_RETURN_IF_ERROR(kernels::castScaled(comm::flat(half), comm::flat(full), 1.0));
  std::vector<comm::BufferView> views;
  size_t off = 0;
  for (const auto& g : bucket.gradients()) {
    views.push_back(half.slice(off, g.count));
    off += g.count;
  }
  auto& hb = halfBuckets_[bucket.index()];
  hb = std::make_unique<GradBucket>(bucket.index(), bucket.isLast(), half, std::move(views), bucket.parameters(),
                                    bucket.identity());
  DDP_ASSIGN_OR_RETURN(HookResult inner, inner_->run(*hb));
  HookResult r;
  r.work = inner.work;
  r.finish = [innerFinish = std::move(inner.finish), half, full]() -> Status {
    if (innerFinish) DDP_RETURN_IF_ERROR(innerFinish());
    return kernels::castScaled(comm::flat(full), comm::flat(half), 1.0);
  };
  return r;
}

std::unique_ptr<CommHook> makeAllreduceHook(comm::Backend& backend) { return std::make_unique<AllreduceHook>(backend); }
std::unique_ptr<CommHook> makeFp16CompressHook(comm::Backend& backend) {
  return std::make_unique<CompressHook>(backend, DType::kF16);
}
std::unique_ptr<CommHook> makeBf16CompressHook(comm::Backend& backend) {
  return std::make_unique<CompressHook>(backend, DType::kBF16);
}
std::unique_ptr<CommHook> makeFp16Wrapper(std::unique_ptr<CommHook> inner) {
  return std::make_unique<HalfWrapperHook>(std::move(inner), DType::kF16);
}
std::unique_ptr<CommHook> makeBf16Wrapper(std::unique_ptr<CommHook> inner) {
  return std::make_unique<HalfWrapperHook>(std::move(inner), DType::kBF16);
}
std::unique_ptr<CommHook> makeNoopHook() { return std::make_unique<NoopHook>(); }

}  // namespace ddp
