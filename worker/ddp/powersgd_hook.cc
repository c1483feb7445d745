#include "worker/ddp/powersgd_hook.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "kernels/powersgd_ops.h"

namespace ddp {

namespace ops = kernels::powersgd;

struct PowerSgdHook::TensorPlan {
  size_t offset = 0;  // element offset in the bucket buffer
  size_t numel = 0;
  size_t rows = 0, cols = 0, rank = 0;
  bool compress = false;
  std::string key;
  uint64_t keyHash = 0;
  size_t pOffset = 0, qOffset = 0;    // into BucketPlan::p / q
  PowerSgdTensorState* state = nullptr;  // set by run() for compressed tensors
};

// A run of compressed tensors multiplied in one batched product.
struct PowerSgdHook::Batch {
  size_t first = 0;  // index into BucketPlan::compressed
  size_t count = 0;
};

struct PowerSgdHook::BucketPlan {
  std::vector<TensorPlan> tensors;
  std::vector<size_t> compressed;    // indices into tensors
  std::vector<size_t> uncompressed;  // indices into tensors
  std::vector<Batch> batches;
  uint64_t numelBefore = 0, numelAfter = 0;
  std::vector<float> packed, p, q;   // scratch, alive until finish()
  std::vector<float> work;           // f32 copy of a half bucket
  comm::WorkPtr uncompressedWork;
  uint64_t lastIteration = 0;
};

PowerSgdHook::PowerSgdHook(comm::Backend& backend, PowerSgdOptions options)
    : PowerSgdHookBase(backend, options, kName) {}

PowerSgdHook::~PowerSgdHook() = default;

Result<std::unique_ptr<PowerSgdHook>> PowerSgdHook::create(comm::Backend& backend, PowerSgdOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  return std::make_unique<PowerSgdHook>(backend, options);
}

bool PowerSgdHook::shouldCompress(uint64_t n, uint64_t m, uint64_t r, double minCompressionRate) {
  return static_cast<double>((n + m) * r) * minCompressionRate < static_cast<double>(n * m);
}

void PowerSgdHook::clearPlans() { plans_.clear(); }

Result<PowerSgdHook::BucketPlan*> PowerSgdHook::planFor(const GradBucket& bucket) {
  // Caller holds mu_.
  const auto& grads = bucket.gradients();
  const auto& params = bucket.parameters();
  const char* base = static_cast<const char*>(bucket.buffer().data);
  auto offsetOf = [&](size_t i) {
    return grads[i].count == 0 ? size_t{0}
                               : static_cast<size_t>(static_cast<const char*>(grads[i].data) - base) /
                                     dtypeSize(bucket.buffer().dtype);
  };
  auto it = plans_.find(bucket.identity());
  if (it != plans_.end() && it->second->tensors.size() == grads.size()) {
    bool same = true;
    for (size_t i = 0; i < grads.size() && same; ++i) {
      same = it->second->tensors[i].offset == offsetOf(i) && it->second->tensors[i].numel == grads[i].count;
    }
    if (same) return it->second.get();
  }
  auto plan = std::make_unique<BucketPlan>();
  const uint64_t r = static_cast<uint64_t>(options_.matrixApproximationRank);
  size_t pSize = 0, qSize = 0, packedSize = 0;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < grads.size(); ++i) {
    TensorPlan t;
    t.numel = grads[i].count;
    t.offset = offsetOf(i);
    t.key = tensorKey(bucket, i);
    if (!seen.emplace(t.key, i).second) {
      return invalidArgument(name_ + " bucket " + std::to_string(bucket.index()) + ": two gradients share the key '" +
                             t.key + "' (parameter names must be unique)");
    }
    t.keyHash = stableHash(t.key);
    const Parameter* param = i < params.size() ? params[i] : nullptr;
    // Note: shape[0] x rest; without a shape the tensor is treated as 1-D.
    t.rows = (param != nullptr && !param->shape.empty()) ? static_cast<size_t>(param->shape[0]) : t.numel;
    t.cols = t.rows == 0 ? 0 : t.numel / t.rows;
    t.rank = std::min<size_t>({t.rows, t.cols, r});
    t.compress = t.numel > 0 && shouldCompress(t.rows, t.cols, t.rank, options_.minCompressionRate);
    plan->numelBefore += t.numel;
    if (t.compress) {
      t.pOffset = pSize;
      t.qOffset = qSize;
      pSize += t.rows * t.rank;
      qSize += t.cols * t.rank;
      plan->numelAfter += (t.rows + t.cols) * t.rank;
      plan->compressed.push_back(i);
    } else {
      plan->numelAfter += t.numel;
      packedSize += t.numel;
      plan->uncompressed.push_back(i);
    }
    plan->tensors.push_back(std::move(t));
  }
  // Batches: adjacent compressed tensors of one shape lying back to back in the buffer (their P
  // and Q are back to back by construction), so a batched product needs no copy.
  for (size_t c = 0; c < plan->compressed.size(); ++c) {
    const TensorPlan& t = plan->tensors[plan->compressed[c]];
    if (options_.batchTensorsWithSameShape && !plan->batches.empty()) {
      Batch& b = plan->batches.back();
      const TensorPlan& last = plan->tensors[plan->compressed[b.first + b.count - 1]];
      if (last.rows == t.rows && last.cols == t.cols && last.offset + last.numel == t.offset) {
        ++b.count;
        continue;
      }
    }
    plan->batches.push_back({c, 1});
  }
  plan->packed.resize(packedSize);
  plan->p.resize(pSize);
  plan->q.resize(qSize);
  BucketPlan* raw = plan.get();
  plans_[bucket.identity()] = std::move(plan);
  return raw;
}

Result<HookResult> PowerSgdHook::run(GradBucket& bucket) {
  DDP_RETURN_IF_ERROR(optionsStatus_);
  DDP_RETURN_IF_ERROR(checkBucket(bucket));
  const std::string where = name_ + " bucket " + std::to_string(bucket.index());
  uint64_t iteration = 0;
  BucketPlan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    iteration = state_.iteration;
    if (iteration < static_cast<uint64_t>(options_.startPowerSgdIter)) plan = nullptr;
    else {
      evictStalePlans(plans_, iteration);
      DDP_ASSIGN_OR_RETURN(plan, planFor(bucket));
      plan->lastIteration = iteration;
      // Find or create every compressed tensor's state (std::map nodes stay put).
      for (size_t idx : plan->compressed) {
        TensorPlan& t = plan->tensors[idx];
        PowerSgdTensorState& s = state_.tensors[t.key];
        if (s.rows != t.rows || s.cols != t.cols) {
          if (s.rows != 0 || s.cols != 0) {
            DDP_LOG(Warning) << where << ": state of '" << t.key << "' was for " << s.rows << " x " << s.cols
                             << ", tensor is " << t.rows << " x " << t.cols << ": starting it afresh";
          }
          s = PowerSgdTensorState{};
          s.rows = t.rows;
          s.cols = t.cols;
        }
        t.state = &s;
      }
    }
  }
  if (plan == nullptr) return runAllreduce(bucket);
  account(bucket, plan->numelBefore, plan->numelAfter);

  const Device cpu = Device::cpu();
  DDP_ASSIGN_OR_RETURN(float* base, workingCopy(bucket.buffer(), plan->work));
  // 1. Q from memory (warm start) or from the seeded generator.
  for (size_t idx : plan->compressed) {
    TensorPlan& t = plan->tensors[idx];
    PowerSgdTensorState& s = *t.state;
    float* q = plan->q.data() + t.qOffset;
    if (options_.warmStart && s.rank == t.rank && s.q.size() == t.cols * t.rank) {
      std::memcpy(q, s.q.data(), s.q.size() * sizeof(float));
      refillZeroColumns(q, t.cols, t.rank, qSeed(iteration, t.keyHash));
    } else {
      ops::fillStandardNormal(q, t.cols * t.rank, qSeed(iteration, t.keyHash));
    }
  }
  // 2. Uncompressed tensors: pack and allreduce first.
  plan->uncompressedWork = nullptr;
  if (!plan->packed.empty()) {
    size_t at = 0;
    for (size_t idx : plan->uncompressed) {
      const TensorPlan& t = plan->tensors[idx];
      std::memcpy(plan->packed.data() + at, base + t.offset, t.numel * sizeof(float));
      at += t.numel;
    }
    plan->uncompressedWork = backend_.allreduce(comm::viewOf(plan->packed.data(), plan->packed.size()), comm::ReduceOp::kSum);
  }
  const bool isLast = bucket.isLast();
  HookResult result;
  result.finish = [this, plan, base, isLast, buffer = bucket.buffer()]() {
    DDP_RETURN_IF_ERROR(finishBucket(plan, base, isLast));
    return writeBack(buffer, base);
  };
  if (plan->compressed.empty()) {
    result.work = plan->uncompressedWork;
    return result;
  }
  // 3. Orthogonal Q; P = M Q, with the error feedback folded into the same pass over the
  //    gradient (Note [Deferred error feedback] in kernels/powersgd_ops.h); allreduce P.
  const bool feedback = options_.useErrorFeedback;
  for (const Batch& b : plan->batches) {
    const TensorPlan& first = plan->tensors[plan->compressed[b.first]];
    float* q = plan->q.data() + first.qOffset;
    DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, q, b.count, first.cols, first.rank, options_.orthogonalizationEpsilon));
    if (!feedback) {
      DDP_RETURN_IF_ERROR(ops::computeP(cpu, base + first.offset, q, plan->p.data() + first.pOffset, b.count,
                                        first.rows, first.cols, first.rank));
      continue;
    }
    for (size_t c = b.first; c < b.first + b.count; ++c) {
      const TensorPlan& t = plan->tensors[plan->compressed[c]];
      PowerSgdTensorState& s = *t.state;
      if (s.midStep) {
        DDP_LOG(Warning) << where << ": the last step of '" << t.key
                         << "' failed after its first pass: dropping its error feedback";
        s.error.clear();
        s.midStep = false;
      }
      if (s.error.size() != t.numel) {  // no error yet: M = G
        s.error.assign(t.numel, 0.0f);
        s.errorDeferred = false;
      }
      const bool deferred = s.errorDeferred;
      if (deferred && (s.sentP.size() != t.rows * t.rank || s.sentQ.size() != t.cols * t.rank)) {
        return internalError(where + ": deferred error feedback of '" + t.key + "' does not match rank " +
                             std::to_string(t.rank));
      }
      // S = G + error; the gradient itself is only read (M~ overwrites it in finish()).
      DDP_RETURN_IF_ERROR(ops::compensateAndComputeP(cpu, base + t.offset, s.error.data(),
                                                     deferred ? s.sentP.data() : nullptr,
                                                     deferred ? s.sentQ.data() : nullptr,
                                                     plan->q.data() + t.qOffset, plan->p.data() + t.pOffset, t.rows,
                                                     t.cols, t.rank));
      s.errorDeferred = false;  // `error` now holds S until finish()
      s.midStep = true;
    }
  }
  comm::WorkPtr pWork = backend_.allreduce(comm::viewOf(plan->p.data(), plan->p.size()), comm::ReduceOp::kSum);
  DDP_RETURN_IF_ERROR(pWork->wait().withContext(where + ": allreduce of P"));
  // 4. Orthogonalise P; Q = M^T P (M: the bucket, or the compensated sums); allreduce Q and
  //    leave it in flight.
  for (const Batch& b : plan->batches) {
    const TensorPlan& first = plan->tensors[plan->compressed[b.first]];
    float* p = plan->p.data() + first.pOffset;
    DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, p, b.count, first.rows, first.rank, options_.orthogonalizationEpsilon));
    if (!feedback) {
      DDP_RETURN_IF_ERROR(ops::computeQ(cpu, base + first.offset, p, plan->q.data() + first.qOffset, b.count,
                                        first.rows, first.cols, first.rank));
      continue;
    }
    for (size_t c = b.first; c < b.first + b.count; ++c) {
      const TensorPlan& t = plan->tensors[plan->compressed[c]];
      DDP_RETURN_IF_ERROR(ops::computeQ(cpu, t.state->error.data(), plan->p.data() + t.pOffset,
                                        plan->q.data() + t.qOffset, 1, t.rows, t.cols, t.rank));
    }
  }
  result.work = backend_.allreduce(comm::viewOf(plan->q.data(), plan->q.size()), comm::ReduceOp::kSum);
  return result;
}

Status PowerSgdHook::finishBucket(BucketPlan* plan, float* base, bool isLast) {
  const Device cpu = Device::cpu();
  const float invWorld = 1.0f / static_cast<float>(backend_.size());
  if (!plan->compressed.empty()) {
    DDP_RETURN_IF_ERROR(ops::scale(cpu, plan->q.data(), plan->q.size(), invWorld));
    for (const Batch& b : plan->batches) {
      const TensorPlan& first = plan->tensors[plan->compressed[b.first]];
      // M~ straight into the bucket, one product per batch; with error feedback the error stays
      // deferred as (S, P, Q) (Note [Deferred error feedback] in kernels/powersgd_ops.h).
      DDP_RETURN_IF_ERROR(ops::decompress(cpu, plan->p.data() + first.pOffset, plan->q.data() + first.qOffset,
                                          base + first.offset, b.count, first.rows, first.cols, first.rank));
      for (size_t c = b.first; c < b.first + b.count; ++c) {
        const TensorPlan& t = plan->tensors[plan->compressed[c]];
        PowerSgdTensorState& s = *t.state;
        const float* p = plan->p.data() + t.pOffset;
        const float* q = plan->q.data() + t.qOffset;
        if (options_.warmStart) {
          s.rank = t.rank;
          s.q.assign(q, q + t.cols * t.rank);
        }
        if (options_.useErrorFeedback) {
          s.sentP.assign(p, p + t.rows * t.rank);
          s.sentQ.assign(q, q + t.cols * t.rank);
          s.errorDeferred = true;
          s.midStep = false;
        }
      }
    }
  }
  if (plan->uncompressedWork != nullptr) {
    // Issued before P's allreduce, so normally long done; finish() issues no collective.
    DDP_RETURN_IF_ERROR(plan->uncompressedWork->wait().withContext(name_ + ": allreduce of uncompressed tensors"));
    plan->uncompressedWork = nullptr;
    size_t at = 0;
    for (size_t idx : plan->uncompressed) {
      const TensorPlan& t = plan->tensors[idx];
      const float* src = plan->packed.data() + at;
      float* dst = base + t.offset;
      for (size_t i = 0; i < t.numel; ++i) dst[i] = src[i] * invWorld;
      at += t.numel;
    }
  }
  advance(isLast);
  return Status::ok();
}

}  // namespace ddp
