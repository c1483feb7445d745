#include "worker/ddp/batched_powersgd_hook.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "common/log.h"
#include "kernels/powersgd_ops.h"
#include "kernels/powersgd_ops_cpu.h"

namespace ddp {

namespace ops = kernels::powersgd;

struct BatchedPowerSgdHook::BucketPlan {
  struct Slice {
    size_t offset = 0;
    size_t numel = 0;
    std::string key;
    PowerSgdTensorState* state = nullptr;  // set by run() when error feedback is on
    bool freshError = false;               // no error carried in yet: nothing to add
  };
  size_t total = 0, side = 0, rank = 0;
  size_t fullRows = 0, rest = 0;  // total = fullRows * side + rest (Note [Square view])
  std::vector<Slice> slices;
  std::vector<float> row, p, q;     // scratch, alive until finish()
  std::vector<float> qt;            // Q transposed (rank x side), for the row-block kernels
  std::vector<float> error;         // one row block's new error before it is split per tensor
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

namespace {

// Note [Row blocks of the square view]
// Error feedback is per tensor but the products walk the square view's rows, which cross
// tensors. Rather than one pass adding each tensor's error and another computing P (and, at the
// end, a bucket-sized error buffer copied out per tensor), the rows are walked in blocks that
// stay in L2: a block gets its tensors' errors added, then its rows of P computed while still in
// cache; in finish() a block's new error lands in a block-sized scratch, then in each tensor's
// state. Each gradient is thus read once and written once per phase.
constexpr size_t kBlockElements = 64 * 1024;  // 256 KiB of floats

}  // namespace

size_t BatchedPowerSgdHook::blockRows(size_t side) {
  return std::max<size_t>(1, kBlockElements / std::max<size_t>(side, 1));
}

template <typename Fn>
void BatchedPowerSgdHook::forEachSlicePart(const BucketPlan& plan, size_t begin, size_t end, Fn&& fn) {
  for (const auto& s : plan.slices) {
    const size_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
    if (lo < hi) fn(s, lo, hi);
  }
}

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
        slot->qt.resize(slot->side * slot->rank);
        slot->error.resize(blockRows(slot->side) * slot->side);
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
  // Error feedback in: a tensor without an error yet starts at zero (its add is skipped).
  for (auto& s : plan->slices) {
    s.freshError = s.state != nullptr && s.state->error.size() != s.numel;
    if (s.freshError) s.state->error.assign(s.numel, 0.0f);
  }
  const bool addErrors = options_.useErrorFeedback;
  Status addStatus;
  auto addErrorsTo = [&](size_t begin, size_t end) {
    forEachSlicePart(*plan, begin, end, [&](const BucketPlan::Slice& s, size_t lo, size_t hi) {
      if (s.freshError || !addStatus.isOk()) return;
      addStatus = ops::errorFeedbackAdd(cpu, base + lo, s.state->error.data() + (lo - s.offset), hi - lo);
    });
  };
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
  DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, plan->q.data(), 1, n, r, eps));
  // P = S Q (Note [Row blocks of the square view]): the full rows straight from the bucket, the
  // partial row from its padded copy, and zero for the all-padding rows.
  kernels::powersgd::cpu::transposeQ(plan->q.data(), n, r, plan->qt.data());
  const size_t step = blockRows(n);
  for (size_t row = 0; row < full; row += step) {
    const size_t rows = std::min(step, full - row);
    if (addErrors) addErrorsTo(row * n, (row + rows) * n);
    kernels::powersgd::cpu::addErrorAndComputePTransposed(base + row * n, nullptr, plan->qt.data(),
                                                          plan->p.data() + row * r, rows, n, r);
  }
  float* lastRow = plan->row.data();  // the partial row, zero-padded
  if (rest > 0) {
    if (addErrors) addErrorsTo(full * n, plan->total);
    std::memcpy(lastRow, base + full * n, rest * sizeof(float));
    std::fill(lastRow + rest, lastRow + n, 0.0f);
    DDP_RETURN_IF_ERROR(ops::computeP(cpu, lastRow, plan->q.data(), plan->p.data() + full * r, 1, 1, n, r));
  }
  std::fill(plan->p.begin() + static_cast<std::ptrdiff_t>((full + (rest > 0 ? 1 : 0)) * r), plan->p.end(), 0.0f);
  DDP_RETURN_IF_ERROR(addStatus);
  comm::WorkPtr pWork = backend_.allreduce(comm::viewOf(plan->p.data(), plan->p.size()), comm::ReduceOp::kSum);
  DDP_RETURN_IF_ERROR(pWork->wait().withContext(where + ": allreduce of P"));
  DDP_RETURN_IF_ERROR(ops::orthogonalize(cpu, plan->p.data(), 1, n, r, eps));
  // Q = S^T P = (full rows)^T P_full + lastRow^T p_last.
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
    // bucket = S~ and error = M - S~ in one pass, a row block at a time (Note [Row blocks of the
    // square view]); the block's error goes straight on to its tensors.
    auto scatterErrors = [&](const float* src, size_t begin, size_t end) {
      forEachSlicePart(*plan, begin, end, [&](const BucketPlan::Slice& s, size_t lo, size_t hi) {
        kernels::powersgd::cpu::streamCopy(s.state->error.data() + (lo - s.offset), src + (lo - begin), hi - lo);
      });
    };
    kernels::powersgd::cpu::transposeQ(plan->q.data(), n, r, plan->qt.data());
    const size_t step = blockRows(n);
    float* blockError = plan->error.data();
    for (size_t row = 0; row < full; row += step) {
      const size_t rows = std::min(step, full - row);
      kernels::powersgd::cpu::decompressTransposed(base + row * n, plan->p.data() + row * r, plan->qt.data(),
                                                   blockError, rows, n, r, /*streamError=*/false);
      scatterErrors(blockError, row * n, (row + rows) * n);
    }
    for (size_t j = 0; j < rest; ++j) {
      blockError[j] = tail[j] - approxRow[j];
      tail[j] = approxRow[j];
    }
    scatterErrors(blockError, full * n, plan->total);
  } else {
    DDP_RETURN_IF_ERROR(ops::decompress(cpu, plan->p.data(), plan->q.data(), base, 1, full, n, r));
    std::memcpy(tail, approxRow, rest * sizeof(float));
  }
  advance(isLast);
  return Status::ok();
}

}  // namespace ddp
