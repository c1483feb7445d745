#include "worker/join/join.h"

#include <cmath>

#include "common/log.h"

namespace ddp::join {
namespace {

Status checkDevice(const Joinable& j) {
  if (!j.joinDevice().isCpu()) {
    return unimplemented("Join: joinable device " + j.joinDevice().toString() +
                         " is not supported; the join counters are host buffers (CPU backends)");
  }
  return Status::ok();
}

// A blocking sum-allreduce of one float on `pg`.
Result<float> allreduceScalar(comm::Backend& pg, float value, Deadline deadline, const char* what) {
  float v = value;
  comm::WorkPtr w = pg.allreduce(comm::viewOf(&v, 1), comm::ReduceOp::kSum);
  Status st = w->wait(deadline);
  if (!st.isOk()) {
    // The Work may still write into `v`: wait out the op's own timeout before it leaves scope.
    if (!w->isCompleted()) (void)w->wait();
    return st.withContext(std::string("Join ") + what);
  }
  return v;
}

}  // namespace

JoinNotification::~JoinNotification() {
  if (!work_ || work_->isCompleted()) return;
  // Keep the buffer alive until the allreduce finishes without blocking when we can.
  if (auto cw = std::dynamic_pointer_cast<comm::CompletionWork>(work_)) {
    cw->onComplete([count = count_](const Status&) { (void)count; });
  } else {
    (void)work_->wait();
  }
}

Result<int> JoinNotification::activeRanks(Deadline deadline) {
  DDP_RETURN_IF_ERROR(work_->wait(deadline).withContext("Join notify allreduce"));
  return static_cast<int>(std::lround(*count_));
}

Join::Join(std::vector<Joinable*> joinables, JoinOptions options)
    : joinables_(std::move(joinables)), options_(std::move(options)) {
  for (size_t i = 0; i < joinables_.size(); ++i) {
    JoinConfig& c = joinables_[i]->joinConfig_;
    c.enable = options_.enable;
    c.throwOnEarlyTermination = options_.throwOnEarlyTermination;
    c.isFirstJoinable = i == 0;
    c.joined = false;
    c.join = this;
  }
  hooks_.reserve(joinables_.size());
  for (Joinable* j : joinables_) hooks_.push_back(j->joinHook(options_.hookOptions));
}

Result<std::unique_ptr<Join>> Join::create(std::vector<Joinable*> joinables, JoinOptions options) {
  if (joinables.empty()) return invalidArgument("Join: needs at least one joinable");
  comm::Backend* pg = nullptr;
  for (size_t i = 0; i < joinables.size(); ++i) {
    Joinable* j = joinables[i];
    if (j == nullptr) return invalidArgument("Join: joinable " + std::to_string(i) + " is null");
    if (j->joinConfig_.join != nullptr) {
      return failedPrecondition("Join: joinable " + std::to_string(i) + " is already inside another Join");
    }
    comm::Backend* mine = &j->joinProcessGroup();
    if (pg != nullptr && mine != pg) {
      return invalidArgument("Join: joinables must share one process group; joinable " + std::to_string(i) +
                             " uses a different one (" + mine->name() + " rank " + std::to_string(mine->rank()) +
                             " of " + std::to_string(mine->size()) + ") than joinable 0");
    }
    pg = mine;
    if (options.enable) DDP_RETURN_IF_ERROR(checkDevice(*j));
  }
  if (options.skewWarningRounds < 1) return invalidArgument("Join: skewWarningRounds must be >= 1");
  return std::unique_ptr<Join>(new Join(std::move(joinables), std::move(options)));
}

Join::~Join() {
  if (options_.enable && !finished_) {
    DDP_LOG(Warning) << "Join destroyed without finish(): this rank runs no shadow loop; ranks still "
                        "iterating wait for it until their collective deadlines";
  }
  for (Joinable* j : joinables_) j->joinConfig_ = JoinConfig{};
}

Result<int> Join::countActive(Deadline deadline) {
  DDP_ASSIGN_OR_RETURN(float n, allreduceScalar(joinables_.front()->joinProcessGroup(), 0.f, deadline,
                                                "count of active ranks"));
  return static_cast<int>(std::lround(n));
}

Status Join::finish(Deadline deadline) {
  if (finished_) return failedPrecondition("Join::finish called twice");
  finished_ = true;
  if (!options_.enable) return Status::ok();
  for (Joinable* j : joinables_) j->joinConfig_.joined = true;
  auto& hooks = hooks_;
  comm::Backend& pg = joinables_.front()->joinProcessGroup();

  bool isLastJoiner = true;
  while (true) {
    DDP_ASSIGN_OR_RETURN(int active, countActive(deadline));
    lastActiveCount_ = active;
    if (active == 0) break;
    if (options_.throwOnEarlyTermination) {
      // Matches the active ranks' second notify allreduce, which then reports a joined rank.
      DDP_RETURN_IF_ERROR(allreduceScalar(pg, 1.f, deadline, "early-termination signal").status());
      return abortedError("Join: rank " + std::to_string(pg.rank()) +
                          " exhausted all inputs (throwOnEarlyTermination)");
    }
    ++rounds_;
    if (rounds_ > options_.skewWarningRounds && !warnedSkew_) {
      warnedSkew_ = true;
      DDP_LOG(Warning) << "Join: rank " << pg.rank() << " has shadowed " << rounds_
                       << " iterations after running out of inputs; the inputs are very uneven";
    }
    for (size_t i = 0; i < hooks.size(); ++i) {
      DDP_RETURN_IF_ERROR(hooks[i]->mainHook(deadline).withContext("Join main hook of joinable " + std::to_string(i)));
    }
    isLastJoiner = false;
  }
  for (size_t i = 0; i < hooks.size(); ++i) {
    DDP_RETURN_IF_ERROR(
        hooks[i]->postHook(isLastJoiner, deadline).withContext("Join post hook of joinable " + std::to_string(i)));
  }
  return Status::ok();
}

Result<std::shared_ptr<JoinNotification>> Join::notifyJoinContext(Joinable& joinable, Deadline deadline) {
  const JoinConfig& c = joinable.joinConfig_;
  if (c.join == nullptr || !c.enable || !c.isFirstJoinable || c.joined) return std::shared_ptr<JoinNotification>();
  comm::Backend& pg = joinable.joinProcessGroup();
  auto count = std::make_shared<float>(1.f);
  comm::WorkPtr w = pg.allreduce(comm::viewOf(count.get(), 1), comm::ReduceOp::kSum);
  auto note = std::make_shared<JoinNotification>(std::move(w), std::move(count));
  if (c.throwOnEarlyTermination) {
    DDP_ASSIGN_OR_RETURN(float joined, allreduceScalar(pg, 0.f, deadline, "early-termination check"));
    if (joined > 0.f) {
      return abortedError("Join: detected at least one rank that exhausted its inputs; stopping on rank " +
                          std::to_string(pg.rank()) + " (throwOnEarlyTermination)");
    }
  }
  return note;
}

}  // namespace ddp::join
