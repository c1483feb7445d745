#include "worker/ddp/batched_powersgd_hook.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "common/log.h"
#include "kernels/powersgd_ops.h"

namespace ddp {

namespace ops = kernels::powersgd;

struct BatchedPowerSgdHook::BucketPlan {
  struct Slice {
    size_t offset = 0;
    size_t numel = 0;
    std::string key;
    PowerSgdTensorState* state = nullptr;  // set by run() when error feedback is on
  };
  size_t total = 0, side = 0, rank = 0;
  size_t fullRows = 0, rest = 0;  // total = fullRows * side + rest (Note [Square view])
  std::vector<Slice> slices;
  std::vector<float> row, p, q;     // scratch, alive until finish()
  std::vector<float> error;         // the bucket's new error before it is split per tensor
  std::vector<float> work;          // f32 copy of a half bucket
  PowerSgdBucketState* bucketState = nullptr;
  uint64_t lastIteration = 0;
};

BatchedPowerSgdHook::BatchedPowerSgdHook(comm::Backend& backend, PowerSgdOptions options)
    : PowerSgdHookBase(backend, options, kName) {}

BatchedPowerSgdHook::~BatchedPowerSgdHook() = default;

Result<std::unique_ptr<BatchedPowerSgdHook>> BatchedPowerSgdHook::create(comm::Backend& backend,
                                                                         PowerSgdOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  return std::make_unique<BatchedPowerSgdHook>(backend, options);
}

uint64_t BatchedPowerSgdHook::squareSide(uint64_t n) {
  uint64_t s = static_cast<uint64_t>(std::sqrt(static_cast<double>(n)));
  while (s * s < n) ++s;
  while (s > 0 && (s - 1) * (s - 1) >= n) --s;
  return s;
}

void BatchedPowerSgdHook::clearPlans() { plans_.clear(); }

Result<HookResult> BatchedPowerSgdHook::run(GradBucket& bucket) {
  DDP_RETURN_IF_ERROR(optionsStatus_);
  DDP_RETURN_IF_ERROR(checkBucket(bucket));
  const std::string where = name_ + " bucket " + std::to_string(bucket.index());
  const comm::BufferView buf = bucket.buffer();
  const char* bufferStart = static_cast<const char*>(buf.data);
  uint64_t iteration = 0;
  BucketPlan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    iteration = state_.iteration;
    if (iteration >= static_cast<uint64_t>(options_.startPowerSgdIter) && buf.count > 0) {
      evictStalePlans(plans_, iteration);
      auto& slot = plans_[bucket.identity()];
      if (slot == nullptr || slot->total != buf.count) {
        slot = std::make_unique<BucketPlan>();
        slot->total = buf.count;
        slot->side = squareSide(buf.count);
        slot->rank = std::min<size_t>(slot->side, static_cast<size_t>(options_.matrixApproximationRank));
        slot->fullRows = buf.count / slot->side;
        slot->rest = buf.count % slot->side;
        slot->row.resize(slot->side);
        slot->p.resize(slot->side * slot->rank);
        slot->q.resize(slot->side * slot->rank);
      }
      plan = slot.get();
      plan->lastIteration = iteration;
      plan->slices.clear();
      const auto& grads = bucket.gradients();
      std::set<std::string> keys;
      for (size_t i = 0; i < grads.size(); ++i) {
        if (grads[i].count == 0) continue;
        BucketPlan::Slice s;
        s.offset = static_cast<size_t>(static_cast<const char*>(grads[i].data) - bufferStart) / dtypeSize(buf.dtype);
        s.numel = grads[i].count;
        s.key = tensorKey(bucket, i);
        if (!keys.insert(s.key).second) {
          return invalidArgument(where + ": two gradients share the key '" + s.key +
                                 "' (parameter names must be unique)");
        }
        if (options_.useErrorFeedback) {
          PowerSgdTensorState& ts = state_.tensors[s.key];
          if (ts.rows != s.numel || ts.cols != 1) ts = PowerSgdTensorState{s.numel, 1, {}, 0, {}};
          s.state = &ts;
        }
        plan->slices.push_back(std::move(s));
      }
      PowerSgdBucketState& bs = state_.buckets[bucket.identity()];
      if (bs.side != plan->side || bs.rank != plan->rank) bs = PowerSgdBucketState{plan->side, plan->rank, {}};
      plan->bucketState = &bs;
    }
  }
  if (plan == nullptr) return runAllreduce(bucket);
  account(bucket, plan->total, 2 * plan->side * plan->rank);

  const Device cpu = Device::cpu();
  DDP_ASSIGN_OR_RETURN(float* base, workingCopy(buf, plan->work));
  // Error feedback in.
  for (auto& s : plan->slices) {
    if (s.state == nullptr) continue;
    if (s.state->error.size() == s.numel) {
      DDP_RETURN_IF_ERROR(ops::errorFeedbackAdd(cpu, base + s.offset, s.state->error.data(), s.numel));
    } else {
      s.state->error.assign(s.numel, 0.0f);
    }
  }
  PowerSgdBucketState& bs = *plan->bucketState;
  if (options_.warmStart && bs.q.size() == plan->q.size()) {
    std::memcpy(plan->q.data(), bs.q.data(), bs.q.size() * sizeof(float));
    refillZeroColumns(plan->q.data(), plan->side, plan->rank, qSeed(iteration, bucket.identity()));
  } else {
    ops::fillStandardNormal(plan->q.data(), plan->q.size(), qSeed(iteration, bucket.identity()));
  }
  const size_t n = plan->side, r = plan->rank;
  const float eps = options_.orthogonalizationEpsilon;
  const size_t full = plan->fullRows, rest = plan->rest;
  float* lastRow = plan->row.data();  // the partial row, zero-padded
  if (rest > 0) {
    std::memcpy(lastRow, base + full * n, rest * sizeof(float));
    std::fill(lastRow + rest, lastRow + n, 0.0f);
  }
  DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, plan->q.data(), 1, n, r, eps));
  // P = S Q: the full rows straight from the bucket, the partial row from its padded copy, and
  // zero for the all-padding rows.
  std::fill(plan->p.begin(), plan->p.end(), 0.0f);
  DDP_RETURN_IF_ERROR(ops::computeP(cpu, base, plan->q.data(), plan->p.data(), 1, full, n, r));
  if (rest > 0) DDP_RETURN_IF_ERROR(ops::computeP(cpu, lastRow, plan->q.data(), plan->p.data() + full * r, 1, 1, n, r));
  comm::WorkPtr pWork = backend_.allreduce(comm::viewOf(plan->p.data(), plan->p.size()), comm::ReduceOp::kSum);
  DDP_RETURN_IF_ERROR(pWork->wait().withContext(where + ": allreduce of P"));
  DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, plan->p.data(), 1, n, r, eps));
  // Q = S^T P = (full rows)^T P_full + lastRow^T p_last.
  std::fill(plan->q.begin(), plan->q.end(), 0.0f);
  DDP_RETURN_IF_ERROR(ops::computeQ(cpu, base, plan->p.data(), plan->q.data(), 1, full, n, r));
  if (rest > 0) {
    const float* pLast = plan->p.data() + full * r;
    for (size_t j = 0; j < rest; ++j)
      for (size_t k = 0; k < r; ++k) plan->q[j * r + k] += lastRow[j] * pLast[k];
  }
  HookResult result;
  result.work = backend_.allreduce(comm::viewOf(plan->q.data(), plan->q.size()), comm::ReduceOp::kSum);
  const bool isLast = bucket.isLast();
  result.finish = [this, plan, base, isLast, buf]() {
    DDP_RETURN_IF_ERROR(finishBucket(plan, base, isLast));
    return writeBack(buf, base);
  };
  return result;
}

Status BatchedPowerSgdHook::finishBucket(BucketPlan* plan, float* base, bool isLast) {
  const Device cpu = Device::cpu();
  const size_t n = plan->side, r = plan->rank;
  DDP_RETURN_IF_ERROR(ops::scale(cpu, plan->q.data(), plan->q.size(), 1.0f / static_cast<float>(backend_.size())));
  if (options_.warmStart) plan->bucketState->q = plan->q;
  const size_t full = plan->fullRows, rest = plan->rest;
  const float* pLast = plan->p.data() + full * r;
  float* approxRow = plan->row.data();
  if (rest > 0) DDP_RETURN_IF_ERROR(ops::decompress(cpu, pLast, plan->q.data(), approxRow, 1, 1, n, r));
  float* tail = base + full * n;
  if (options_.useErrorFeedback) {
    // bucket = S~ and the bucket's error = M - S~ in one pass, then each tensor keeps its slice.
    plan->error.resize(plan->total);
    DDP_RETURN_IF_ERROR(ops::decompressWithError(cpu, base, plan->p.data(), plan->q.data(), plan->error.data(), full, n, r));
    for (size_t j = 0; j < rest; ++j) {
      plan->error[full * n + j] = tail[j] - approxRow[j];
      tail[j] = approxRow[j];
    }
    for (const auto& s : plan->slices) {
      std::memcpy(s.state->error.data(), plan->error.data() + s.offset, s.numel * sizeof(float));
    }
  } else {
    DDP_RETURN_IF_ERROR(ops::decompress(cpu, plan->p.data(), plan->q.data(), base, 1, full, n, r));
    std::memcpy(tail, approxRow, rest * sizeof(float));
  }
  advance(isLast);
  return Status::ok();
}

}  // namespace ddp
