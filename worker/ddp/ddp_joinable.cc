#include "worker/ddp/ddp_joinable.h"

#include <cstring>

namespace ddp {
namespace {

class DdpJoinHook final : public join::JoinHook {
 public:
  explicit DdpJoinHook(DdpJoinable& ddp) : ddp_(ddp) {}
  Status mainHook(Deadline deadline) override { return ddp_.shadowIteration(deadline); }
  Status postHook(bool isLastJoiner, Deadline deadline) override { return ddp_.syncFinalModel(isLastJoiner, deadline); }

 private:
  DdpJoinable& ddp_;
};

Status waitAll(std::vector<comm::WorkPtr>& works, Deadline deadline, const char* what) {
  Status first;
  for (auto& w : works) {
    Status st = w->wait(deadline);
    if (!st.isOk() && !w->isCompleted()) (void)w->wait();
    if (!st.isOk() && first.isOk()) first = st.withContext(what);
  }
  return first;
}

}  // namespace

DdpJoinable::DdpJoinable(Reducer& reducer, std::vector<comm::BufferView> buffers)
    : reducer_(reducer), buffers_(std::move(buffers)) {}

Device DdpJoinable::joinDevice() const {
  const auto& ps = reducer_.parameters();
  return ps.empty() ? Device::cpu() : ps.front()->device;
}

std::unique_ptr<join::JoinHook> DdpJoinable::joinHook(const join::JoinHookOptions& options) {
  divideByInitialWorldSize_ = options.divideByInitialWorldSize;
  return std::make_unique<DdpJoinHook>(*this);
}

Status DdpJoinable::beginIteration(Deadline deadline) {
  if (joinConfig().join != nullptr && joinConfig().enable && reducer_.noSync()) {
    return failedPrecondition("DdpJoinable: no_sync steps are not supported inside a Join");
  }
  notification_.reset();
  DDP_ASSIGN_OR_RETURN(notification_, join::Join::notifyJoinContext(*this, deadline));
  return Status::ok();
}

Status DdpJoinable::finalize(Deadline deadline) {
  DDP_RETURN_IF_ERROR(reducer_.finalize(deadline));
  auto note = std::move(notification_);
  if (note == nullptr || divideByInitialWorldSize_) return Status::ok();
  DDP_ASSIGN_OR_RETURN(int active, note->activeRanks(deadline));
  if (active <= 0 || active == reducer_.backend().size()) return Status::ok();
  return scaleGradients(static_cast<float>(reducer_.backend().size()) / static_cast<float>(active));
}

Status DdpJoinable::scaleGradients(float factor) {
  for (Parameter* p : reducer_.parameters()) {
    if (p->grad == nullptr) continue;
    if (p->dtype != DType::kF32 || !p->device.isCpu()) {
      return unimplemented("DdpJoinable: divideByInitialWorldSize = false needs f32 CPU gradients; " + p->name +
                           " is " + dtypeName(p->dtype) + " on " + p->device.toString());
    }
    float* g = static_cast<float*>(p->grad);
    for (size_t k = 0, n = p->numel(); k < n; ++k) g[k] *= factor;
  }
  return Status::ok();
}

Status DdpJoinable::shadowIteration(Deadline deadline) {
  const auto& ps = reducer_.parameters();
  for (Parameter* p : ps) {
    if (p->grad != nullptr && p->device.isCpu()) std::memset(p->grad, 0, p->bytes());
  }
  for (size_t i = ps.size(); i-- > 0;) {
    DDP_RETURN_IF_ERROR(reducer_.markGradReady(i).withContext("DDP join shadow step"));
  }
  DDP_RETURN_IF_ERROR(reducer_.finalize(deadline).withContext("DDP join shadow step"));
  if (divideByInitialWorldSize_) return Status::ok();
  const int active = joinConfig().join ? joinConfig().join->lastActiveCount() : 0;
  if (active <= 0 || active == reducer_.backend().size()) return Status::ok();
  return scaleGradients(static_cast<float>(reducer_.backend().size()) / static_cast<float>(active));
}

Status DdpJoinable::syncFinalModel(bool isLastJoiner, Deadline deadline) {
  comm::Backend& pg = reducer_.backend();
  int64_t authority = isLastJoiner ? pg.rank() : -1;
  DDP_RETURN_IF_ERROR(pg.allreduce(comm::viewOf(&authority, 1), comm::ReduceOp::kMax)
                          ->wait(deadline)
                          .withContext("DDP join: agreeing on the last joiner"));
  if (authority < 0) return internalError("DDP join: no rank reported being the last joiner");
  std::vector<comm::WorkPtr> works;
  for (Parameter* p : reducer_.parameters()) {
    if (p->numel() == 0) continue;
    works.push_back(pg.broadcast({p->data, p->numel(), p->dtype, p->device}, static_cast<int>(authority)));
  }
  for (const auto& b : buffers_) {
    if (b.count > 0) works.push_back(pg.broadcast(b, static_cast<int>(authority)));
  }
  return waitAll(works, deadline, "DDP join: broadcasting the final model");
}

}  // namespace ddp
