#include <algorithm>
#include <string>
#include <thread>

#include "common/fnv1a.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/gloo_backend_internal.h"
#include "worker/comm/gloo_header_lane.h"

// GlooBackend: argument validation, issue (sequence numbers, queueing, header posting) and
// coalescing scopes. Lifecycle, the executor and abort are in gloo_backend.cc.

namespace ddp::comm {

using namespace gloo_internal;

void GlooBackend::track(const std::shared_ptr<CompletionWork>& work, const std::string& name) {
  const uint64_t seq = work->seq();
  flight_->recordIssued(seq, name, work->bytes());
  {
    std::lock_guard<std::mutex> lock(live_->mu);
    live_->works[seq] = work;
  }
  watchdog_->watch(WatchedOp{seq, name, work->bytes(), group_, work->timeout(), clock_.now() + work->timeout()});
  // The callback may outlive this backend only if the Work is completed after destruction,
  // which the destructor rules out (it fails or drains every op first).
  Watchdog* wd = watchdog_.get();
  FlightRecorder* fr = flight_.get();
  std::weak_ptr<Live> live = live_;
  work->onComplete([wd, fr, live, seq](const Status& st) {
    wd->unwatch(seq);
    fr->recordEnded(seq, stateOf(st), st.isOk() ? std::string() : st.message());
    if (auto l = live.lock()) {
      std::lock_guard<std::mutex> lock(l->mu);
      l->works.erase(seq);
    }
  });
}

Status GlooBackend::validateOp(const Op& op) const {
  return validateOpArgs(op, options_.rank, options_.size, group_, [](const BufferView& b) {
    return b.device.isCpu() ? std::string() : "is on " + b.device.toString() + "; gloo needs CPU buffers";
  });
}

WorkPtr GlooBackend::issue(const OpArgs& args, const OpOptions& opts) {
  Op op{args};
  op.bytes = op.in.bytes();
  op.timeout = opts.timeout.value_or(options_.timeout);
  std::unique_lock<std::mutex> lock(mu_);
  op.seq = nextSeq_++;
  auto work = std::make_shared<CompletionWork>(op.seq, op.type, op.bytes, op.timeout);
  if (aborted_) {
    work->complete(abortStatus_);
    return work;
  }
  if (op.timeout <= Duration::zero()) {
    work->complete(invalidArgument(std::string(opTypeName(op.type)) + ": timeout must be positive"));
    return work;
  }
  Status valid = validateOp(op);
  if (!valid.isOk()) {
    work->complete(valid);
    return work;
  }
  op.work = work;
  track(work, opTypeName(op.type));
  if (coalescing_ && std::this_thread::get_id() == coalescingThread_) {
    held_.push_back(std::move(op));
    return work;
  }
  auto task = std::make_shared<Task>();
  task->seq = op.seq;
  task->collSeq = isCollective(op.type) ? nextCollSeq_++ : 0;
  task->timeout = op.timeout;
  task->work = work;
  if (task->collSeq != 0) {
    lane_->post(headerOf(op, task->collSeq), std::string(opTypeName(op.type)) + " seq " + std::to_string(op.seq) + " on " + group_,
                toMs(op.timeout + kGlooTimeoutSlack));
  }
  task->members.push_back(std::move(op));
  enqueue(std::move(task));
  return work;
}

void GlooBackend::enqueue(std::shared_ptr<Task> task) {
  queue_.push_back(std::move(task));
  cv_.notify_all();
}

WorkPtr GlooBackend::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  return issue(OpArgs::allreduce(buf, op), opts);
}

WorkPtr GlooBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  return issue(OpArgs::broadcast(buf, root), opts);
}

WorkPtr GlooBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  return issue(OpArgs::allgather(in, out), opts);
}

WorkPtr GlooBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts) {
  return issue(OpArgs::reduceScatter(in, out, op), opts);
}

WorkPtr GlooBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  return issue(OpArgs::gather(in, out, root), opts);
}

WorkPtr GlooBackend::barrier(const OpOptions& opts) { return issue(OpArgs::barrier(), opts); }

WorkPtr GlooBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return issue(OpArgs::send(buf, dst, tag), opts);
}

WorkPtr GlooBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return issue(OpArgs::recv(buf, src, tag), opts);
}

Status GlooBackend::startCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  if (coalescing_) return failedPrecondition("startCoalescing on " + group_ + ": a coalescing scope is already open (scopes do not nest)");
  coalescing_ = true;
  coalescingThread_ = std::this_thread::get_id();
  return Status::ok();
}

WorkPtr GlooBackend::endCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!coalescing_ || std::this_thread::get_id() != coalescingThread_) {
    return completedWork(failedPrecondition("endCoalescing on " + group_ + " without startCoalescing on this thread"),
                         OpType::kCoalesced);
  }
  coalescing_ = false;
  std::vector<Op> members = std::move(held_);
  held_.clear();
  const uint64_t seq = nextSeq_++;
  size_t bytes = 0;
  Duration timeout = Duration::zero();
  bool anyCollective = false;
  for (const auto& m : members) {
    bytes += m.bytes;
    timeout = std::max(timeout, m.timeout);
    anyCollective = anyCollective || isCollective(m.type);
  }
  if (members.empty()) timeout = options_.timeout;
  auto work = std::make_shared<CompletionWork>(seq, OpType::kCoalesced, bytes, timeout);
  if (aborted_) {
    work->complete(abortStatus_);
    for (auto& m : members) m.work->complete(abortStatus_);
    return work;
  }
  if (members.empty()) {
    work->complete(Status::ok());
    return work;
  }
  track(work, opTypeName(OpType::kCoalesced));
  // The batch Work completes when every member has, with the first failure if any.
  struct Join {
    std::mutex mu;
    size_t remaining;
    Status first;
  };
  auto join = std::make_shared<Join>();
  join->remaining = members.size();
  for (auto& m : members) {
    // Members hold the batch Work (not the reverse): it completes even if its caller dropped it.
    m.work->onComplete([join, work](const Status& st) {
      bool last;
      Status result;
      {
        std::lock_guard<std::mutex> l(join->mu);
        if (!st.isOk() && join->first.isOk()) join->first = st;
        last = --join->remaining == 0;
        result = join->first;
      }
      if (last) work->complete(result);
    });
  }
  auto task = std::make_shared<Task>();
  task->seq = seq;
  task->batch = true;
  task->collSeq = anyCollective ? nextCollSeq_++ : 0;
  if (task->collSeq != 0) {
    OpHeader h;
    h.collSeq = task->collSeq;
    h.type = static_cast<uint8_t>(OpType::kCoalesced);
    uint64_t hash = kFnv1aOffsetBasis;  // common/fnv1a.h
    for (const auto& m : members) {
      if (!isCollective(m.type)) continue;
      const OpHeader mh = headerOf(m, 0);
      ++h.count;
      for (uint64_t v : {uint64_t(mh.type), uint64_t(mh.dtype), uint64_t(mh.reduceOp), uint64_t(int64_t(mh.root)), mh.count}) {
        hash = fnv1aWord(hash, v);
      }
    }
    h.hash = hash;
    lane_->post(h, "coalesced batch seq " + std::to_string(seq) + " (" + std::to_string(members.size()) + " ops) on " + group_,
                toMs(timeout + kGlooTimeoutSlack));
  }
  task->timeout = timeout;
  task->work = work;
  task->members = std::move(members);
  enqueue(std::move(task));
  return work;
}

}  // namespace ddp::comm
