#include "worker/ddp/powersgd_hook_base.h"

#include <vector>

#include "common/log.h"
#include "kernels/bucket_ops.h"
#include "kernels/cast_ops.h"
#include "kernels/powersgd_ops.h"

namespace ddp {

std::string tensorKey(const GradBucket& bucket, size_t i) {
  const auto& params = bucket.parameters();
  if (i < params.size() && params[i] != nullptr && !params[i]->name.empty()) return params[i]->name;
  return "bucket " + std::to_string(bucket.identity()) + "/" + std::to_string(i);
}

PowerSgdHookBase::PowerSgdHookBase(comm::Backend& backend, PowerSgdOptions options, std::string name)
    : backend_(backend), options_(options), optionsStatus_(options.validate()), name_(std::move(name)) {
  state_.hookName = name_;
  state_.randomSeed = options_.randomSeed;
}

Status PowerSgdHookBase::checkBucket(const GradBucket& bucket) const {
  const comm::BufferView buf = bucket.buffer();
  const std::string where = name_ + " bucket " + std::to_string(bucket.index());
  if (buf.dtype != DType::kF32 && buf.dtype != DType::kF16 && buf.dtype != DType::kBF16) {
    return unimplemented(where + ": PowerSGD compresses f32, f16 and bf16 buckets, got " + dtypeName(buf.dtype));
  }
  if (!buf.device.isCpu()) {
    return unimplemented(where + ": PowerSGD hooks run on CPU buckets in this version (the kernels "
                         "support CUDA; the hook's buffers do not yet), got " + buf.device.toString());
  }
  const auto& grads = bucket.gradients();
  if (!bucket.parameters().empty() && bucket.parameters().size() != grads.size()) {
    return invalidArgument(where + ": " + std::to_string(grads.size()) + " gradients but " +
                           std::to_string(bucket.parameters().size()) + " parameters");
  }
  const char* begin = static_cast<const char*>(buf.data);
  const char* end = begin + buf.bytes();
  for (size_t i = 0; i < grads.size(); ++i) {
    const auto& g = grads[i];
    const char* p = static_cast<const char*>(g.data);
    if (g.dtype != buf.dtype || (g.count > 0 && (p < begin || p + g.bytes() > end ||
                                                (p - begin) % dtypeSize(buf.dtype) != 0))) {
      return invalidArgument(where + ": gradient " + std::to_string(i) + " is not a " + dtypeName(buf.dtype) +
                             " view inside the bucket buffer");
    }
    if (i < bucket.parameters().size() && bucket.parameters()[i] != nullptr &&
        bucket.parameters()[i]->numel() != g.count) {
      return invalidArgument(where + ": gradient " + std::to_string(i) + " has " + std::to_string(g.count) +
                             " elements, its parameter " + bucket.parameters()[i]->name + " has " +
                             std::to_string(bucket.parameters()[i]->numel()));
    }
  }
  return Status::ok();
}

Result<HookResult> PowerSgdHookBase::runAllreduce(GradBucket& bucket) {
  const comm::BufferView buf = bucket.buffer();
  const int world = backend_.size();
  DDP_RETURN_IF_ERROR(kernels::scaleInPlace(comm::flat(buf), 1.0 / world));
  HookResult result;
  result.work = backend_.allreduce(buf, comm::ReduceOp::kSum);
  const bool isLast = bucket.isLast();
  result.finish = [this, isLast]() {
    advance(isLast);
    return Status::ok();
  };
  return result;
}

void PowerSgdHookBase::account(const GradBucket& bucket, uint64_t numelBefore, uint64_t numelAfter) {
  std::lock_guard<std::mutex> lock(mu_);
  CompressionStats& s = state_.stats;
  s.numelBeforeCompression += numelBefore;
  s.numelAfterCompression += numelAfter;
  s.bytesBeforeCompression += numelBefore * sizeof(float);
  s.bytesAfterCompression += numelAfter * sizeof(float);
  if (bucket.isLast() && state_.iteration >= state_.nextStatsReport) {
    DDP_LOG(Info) << name_ << " compression stats: iteration " << state_.iteration << ", elements before "
                  << s.numelBeforeCompression << ", after " << s.numelAfterCompression << ", ratio "
                  << s.compressionRatio();
    state_.nextStatsReport = state_.iteration + static_cast<uint64_t>(options_.compressionStatsLoggingFrequency);
  }
}

void PowerSgdHookBase::advance(bool isLast) {
  if (!isLast) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++state_.iteration;
  if (state_.iteration == static_cast<uint64_t>(options_.startPowerSgdIter)) {
    DDP_LOG(Info) << name_ << ": starting PowerSGD compression after " << state_.iteration
                  << " iterations (" << options_.toString() << ")";
  }
}

uint64_t PowerSgdHookBase::qSeed(uint64_t iteration, uint64_t key) const {
  using kernels::powersgd::mix64;
  return mix64(state_.randomSeed ^ mix64(iteration ^ mix64(key)));
}

void PowerSgdHookBase::refillZeroColumns(float* q, size_t rows, size_t r, uint64_t seed) {
  std::vector<float> column;
  for (size_t j = 0; j < r; ++j) {
    bool zero = true;
    for (size_t k = 0; k < rows && zero; ++k) zero = q[k * r + j] == 0.0f;
    if (!zero) continue;
    column.resize(rows);
    kernels::powersgd::fillStandardNormal(column.data(), rows, kernels::powersgd::mix64(seed + j));
    for (size_t k = 0; k < rows; ++k) q[k * r + j] = column[k];
  }
}

Result<float*> PowerSgdHookBase::workingCopy(const comm::BufferView& buf, std::vector<float>& scratch) {
  if (buf.dtype == DType::kF32) return buf.as<float>();
  scratch.resize(buf.count);
  DDP_RETURN_IF_ERROR(kernels::castScaled(comm::flat(comm::viewOf(scratch.data(), scratch.size())), comm::flat(buf)));
  return scratch.data();
}

Status PowerSgdHookBase::writeBack(const comm::BufferView& buf, const float* work) {
  if (buf.dtype == DType::kF32) return Status::ok();
  return kernels::castScaled(comm::flat(buf), comm::flat(comm::viewOf(const_cast<float*>(work), buf.count)));
}

CompressionStats PowerSgdHookBase::compressionStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.stats;
}

uint64_t PowerSgdHookBase::iteration() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.iteration;
}

Status PowerSgdHookBase::materializeErrors(PowerSgdState& state) const {
  std::vector<float> approx;
  for (auto& [key, t] : state.tensors) {
    if (t.midStep) {  // a step failed between its first pass and finish(): no error to save
      DDP_LOG(Warning) << name_ << ": the last step of '" << key
                       << "' failed after its first pass: its error feedback is not saved";
      t.error.clear();
      t.errorDeferred = false;
      t.midStep = false;
      t.sentP.clear();
      t.sentQ.clear();
      continue;
    }
    if (!t.errorDeferred) continue;
    const size_t numel = t.rows * t.cols;
    const size_t rank = t.cols == 0 ? 0 : t.sentQ.size() / t.cols;
    if (t.error.size() != numel || t.sentP.size() != t.rows * rank || t.sentQ.size() != t.cols * rank) {
      return internalError(name_ + ": deferred error feedback of '" + key + "' has inconsistent buffers");
    }
    // error = S - P Q^T, evaluated as the next step would (Note [Deferred error feedback]).
    approx = t.error;
    DDP_RETURN_IF_ERROR(kernels::powersgd::decompressWithError(Device::cpu(), approx.data(), t.sentP.data(),
                                                               t.sentQ.data(), t.error.data(), t.rows, t.cols, rank));
    t.errorDeferred = false;
    t.sentP.clear();
    t.sentQ.clear();
  }
  return Status::ok();
}

PowerSgdState PowerSgdHookBase::stateSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  PowerSgdState copy = state_;
  const Status st = materializeErrors(copy);
  if (!st.isOk()) DDP_LOG(Error) << st.message();
  return copy;
}

Result<std::string> PowerSgdHookBase::saveState() const {
  std::lock_guard<std::mutex> lock(mu_);
  PowerSgdState copy = state_;  // the header fields describe this save
  DDP_RETURN_IF_ERROR(materializeErrors(copy));
  copy.worldSize = backend_.size();
  copy.rank = backend_.rank();
  return copy.serialize();
}

Status PowerSgdHookBase::loadState(std::string_view bytes) {
  DDP_ASSIGN_OR_RETURN(PowerSgdState loaded, PowerSgdState::deserialize(bytes));
  if (loaded.hookName != name_) {
    return invalidArgument(name_ + " loadState: the state was saved by the '" + loaded.hookName +
                           "' hook; its buffers mean something else here");
  }
  const int world = backend_.size();
  if (loaded.worldSize != world) {
    if (options_.worldSizeChangePolicy == WorldSizeChangePolicy::kFail) {
      return failedPrecondition(name_ + " loadState: state saved at world size " +
                                std::to_string(loaded.worldSize) + ", this job runs at " + std::to_string(world) +
                                " (worldSizeChangePolicy = kFail)");
    }
    size_t dropped = 0;
    for (auto& [key, t] : loaded.tensors) {
      if (!t.error.empty()) ++dropped;
      t.error.clear();
    }
    DDP_LOG(Warning) << name_ << " loadState: state saved at world size " << loaded.worldSize
                     << ", this job runs at " << world << ": keeping the iteration (" << loaded.iteration
                     << "), RNG and Q memories, resetting the error feedback of " << dropped << " tensors"
                     << (options_.worldSizeChangePolicy == WorldSizeChangePolicy::kRedistributeErrorFeedback
                             ? " (one rank's state cannot be redistributed: load every saved rank's through "
                               "redistributeErrorFeedback)"
                             : "");
  }
  if (loaded.rank != backend_.rank()) {
    DDP_LOG(Info) << name_ << " loadState: state of rank " << loaded.rank << " loaded on rank " << backend_.rank()
                  << " (error feedback is a per-rank residual; any permutation keeps its sum)";
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(loaded);
  clearPlans();
  return Status::ok();
}

}  // namespace ddp
