#include "tests/support/local_backend.h"

#include <algorithm>

namespace ddp::comm {

LocalBackend::LocalBackend(std::shared_ptr<LocalGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  DDP_CHECK(group_ != nullptr && rank_ >= 0 && rank_ < group_->world());
}

LocalBackend::~LocalBackend() = default;

int LocalBackend::size() const { return group_->world(); }
std::string LocalBackend::name() const { return group_->options().name; }
Duration LocalBackend::defaultTimeout() const { return group_->options().timeout; }

bool LocalBackend::supportsDevice(DeviceType type) const {
  const auto& d = group_->options().devices;
  return std::find(d.begin(), d.end(), type) != d.end();
}

WorkPtr LocalBackend::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  return issue(OpArgs::allreduce(buf, op), opts);
}

WorkPtr LocalBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  return issue(OpArgs::broadcast(buf, root), opts);
}

WorkPtr LocalBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  return issue(OpArgs::allgather(in, out), opts);
}

WorkPtr LocalBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts) {
  return issue(OpArgs::reduceScatter(in, out, op), opts);
}

WorkPtr LocalBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  return issue(OpArgs::gather(in, out, root), opts);
}

WorkPtr LocalBackend::barrier(const OpOptions& opts) { return issue(OpArgs::barrier(), opts); }

WorkPtr LocalBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return issue(OpArgs::send(buf, dst, tag), opts);
}

WorkPtr LocalBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return issue(OpArgs::recv(buf, src, tag), opts);
}

WorkPtr LocalBackend::issue(const OpArgs& args, const OpOptions& opts) {
  Op op{args};
  op.error = validateOpArgs(args, rank_, size(), "local group '" + name() + "'", [this](const BufferView& b) {
    return supportsDevice(b.device.type) ? std::string() : "is on " + b.device.toString() + ", which this group does not accept";
  });
  const bool p2p = op.type == OpType::kSend || op.type == OpType::kRecv;
  op.rank = rank_;
  op.timeout = opts.timeout.value_or(defaultTimeout());
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    op.work = std::make_shared<CompletionWork>(++seq_, op.type, op.in.bytes(), op.timeout);
    if (!p2p) op.collSeq = ++collSeq_;
    aborted = aborted_;
    if (aborted.isOk()) {
      std::erase_if(outstanding_, [](const auto& w) { return w.expired(); });
      outstanding_.push_back(op.work);
      if (coalescing_ && std::this_thread::get_id() == coalescingThread_) {
        held_.push_back(op);
        return op.work;
      }
    }
  }
  auto work = op.work;
  if (!aborted.isOk()) {
    work->complete(aborted);
  } else if (p2p && !op.error.isOk()) {
    work->complete(op.error);
  } else {
    op.deadline = group_->options().clock->now() + op.timeout;
    group_->submit(std::move(op));
  }
  return work;
}

Status LocalBackend::startCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.isOk()) return aborted_;
  if (coalescing_) return failedPrecondition("startCoalescing: a coalescing scope is already open (scopes do not nest)");
  coalescing_ = true;
  coalescingThread_ = std::this_thread::get_id();
  return Status::ok();
}

WorkPtr LocalBackend::endCoalescing() {
  std::vector<Op> held;
  std::shared_ptr<CompletionWork> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!coalescing_) {
      return completedWork(
          aborted_.isOk() ? failedPrecondition("endCoalescing without startCoalescing") : aborted_,
          OpType::kCoalesced);
    }
    if (std::this_thread::get_id() != coalescingThread_) {
      return completedWork(failedPrecondition("endCoalescing from a thread other than the one that started the scope"),
                           OpType::kCoalesced);
    }
    coalescing_ = false;
    held.swap(held_);
    size_t bytes = 0;
    Duration timeout = defaultTimeout();
    for (const auto& op : held) {
      bytes += op.in.bytes();
      timeout = std::max(timeout, op.timeout);
    }
    batch = std::make_shared<CompletionWork>(++seq_, OpType::kCoalesced, bytes, timeout);
  }
  if (held.empty()) {
    batch->complete(Status::ok());
    return batch;
  }
  struct Join {
    std::mutex mu;
    size_t remaining;
    Status first;
  };
  auto join = std::make_shared<Join>();
  join->remaining = held.size();
  for (auto& op : held) {
    op.work->onComplete([join, batch](const Status& st) {
      Status result;
      {
        std::lock_guard<std::mutex> lock(join->mu);
        if (!st.isOk() && join->first.isOk()) join->first = st;
        if (--join->remaining > 0) return;
        result = join->first;
      }
      batch->complete(result);
    });
  }
  const TimePoint now = group_->options().clock->now();
  for (auto& op : held) {
    if ((op.type == OpType::kSend || op.type == OpType::kRecv) && !op.error.isOk()) {
      op.work->complete(op.error);
      continue;
    }
    op.deadline = now + op.timeout;
    group_->submit(std::move(op));
  }
  return batch;
}

void LocalBackend::abort(const Status& reason) {
  Status st = reason.code() == StatusCode::kAborted ? reason : abortedError(reason.message());
  std::vector<std::weak_ptr<CompletionWork>> works;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.isOk()) return;
    aborted_ = st;
    works.swap(outstanding_);
    held_.clear();
    coalescing_ = false;
  }
  group_->abortRank(rank_, st);
  for (auto& w : works) {
    if (auto p = w.lock()) p->complete(st);
  }
}

bool LocalBackend::isAborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !aborted_.isOk();
}

void runLocalRanks(int world, const std::function<void(int rank, Backend& backend)>& fn,
                   LocalGroupOptions options) {
  auto group = makeLocalGroup(world, std::move(options));
  std::vector<std::unique_ptr<LocalBackend>> backends;
  for (int r = 0; r < world; ++r) backends.push_back(std::make_unique<LocalBackend>(group, r));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { fn(r, *backends[r]); });
  }
  for (auto& t : threads) t.join();
}

}  // namespace ddp::comm
