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

Status LocalBackend::checkBuffer(const BufferView& b, const char* what) const {
  if (!supportsDevice(b.device.type)) {
    return invalidArgument(std::string(what) + " on device " + b.device.toString() +
                           " not supported by backend '" + name() + "'");
  }
  if (b.count > 0 && b.data == nullptr) return invalidArgument(std::string(what) + " is null");
  if (dtypeSize(b.dtype) == 0) return invalidArgument(std::string(what) + " has an unknown dtype");
  return Status::ok();
}

WorkPtr LocalBackend::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  Op o;
  o.type = OpType::kAllreduce;
  o.in = buf;
  o.reduce = op;
  o.error = checkBuffer(buf, "allreduce buffer");
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  Op o;
  o.type = OpType::kBroadcast;
  o.in = buf;
  o.root = root;
  o.error = checkBuffer(buf, "broadcast buffer");
  if (o.error.isOk() && (root < 0 || root >= size())) {
    o.error = invalidArgument("broadcast root " + std::to_string(root) + " out of range [0, " +
                              std::to_string(size()) + ")");
  }
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  Op o;
  o.type = OpType::kAllgather;
  o.in = in;
  o.out = out;
  o.error = checkBuffer(in, "allgather input");
  if (o.error.isOk()) o.error = checkBuffer(out, "allgather output");
  if (o.error.isOk() && (out.count != in.count * size() || out.dtype != in.dtype)) {
    o.error = invalidArgument("allgather output must hold " + std::to_string(in.count * size()) +
                              " " + dtypeName(in.dtype) + " (input x world), got " +
                              std::to_string(out.count) + " " + dtypeName(out.dtype));
  }
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op,
                                    const OpOptions& opts) {
  Op o;
  o.type = OpType::kReduceScatter;
  o.in = in;
  o.out = out;
  o.reduce = op;
  o.error = checkBuffer(in, "reduce_scatter input");
  if (o.error.isOk()) o.error = checkBuffer(out, "reduce_scatter output");
  if (o.error.isOk() && (in.count != out.count * size() || out.dtype != in.dtype)) {
    o.error = invalidArgument("reduce_scatter input must hold " +
                              std::to_string(out.count * size()) + " " + dtypeName(out.dtype) +
                              " (output x world), got " + std::to_string(in.count) + " " +
                              dtypeName(in.dtype));
  }
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  Op o;
  o.type = OpType::kGather;
  o.in = in;
  o.out = out;
  o.root = root;
  o.error = checkBuffer(in, "gather input");
  if (o.error.isOk() && (root < 0 || root >= size())) {
    o.error = invalidArgument("gather root " + std::to_string(root) + " out of range [0, " +
                              std::to_string(size()) + ")");
  }
  if (o.error.isOk() && rank_ == root) {
    o.error = checkBuffer(out, "gather output");
    if (o.error.isOk() && (out.count != in.count * size() || out.dtype != in.dtype)) {
      o.error = invalidArgument("gather output on the root must hold " +
                                std::to_string(in.count * size()) + " " + dtypeName(in.dtype) +
                                ", got " + std::to_string(out.count) + " " + dtypeName(out.dtype));
    }
  }
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::barrier(const OpOptions& opts) {
  Op o;
  o.type = OpType::kBarrier;
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return issuePointToPoint(OpType::kSend, buf, dst, tag, opts);
}

WorkPtr LocalBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return issuePointToPoint(OpType::kRecv, buf, src, tag, opts);
}

WorkPtr LocalBackend::issuePointToPoint(OpType type, BufferView buf, int peer, int tag, const OpOptions& opts) {
  const bool send = type == OpType::kSend;
  Op o;
  o.type = type;
  o.in = buf;
  o.root = peer;
  o.tag = tag;
  o.error = checkBuffer(buf, send ? "send buffer" : "recv buffer");
  if (o.error.isOk() && (peer < 0 || peer >= size() || peer == rank_)) {
    o.error = invalidArgument(std::string(send ? "send destination " : "recv source ") + std::to_string(peer) +
                              " invalid for rank " + std::to_string(rank_) + " of " + std::to_string(size()));
  }
  return issue(std::move(o), opts);
}

WorkPtr LocalBackend::issue(Op op, const OpOptions& opts) {
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
