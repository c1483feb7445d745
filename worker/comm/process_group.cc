#include "worker/comm/process_group.h"

#include <algorithm>

namespace ddp::comm {

namespace {

// Completes when every inner Work has; used when some inner Work offers no callbacks.
class MultiWork final : public Work {
 public:
  MultiWork(std::vector<WorkPtr> works, uint64_t seq, OpType type, size_t bytes, Duration timeout)
      : works_(std::move(works)), seq_(seq), type_(type), bytes_(bytes), timeout_(timeout) {}

  Status wait(Deadline deadline) override {
    Status first;
    for (auto& w : works_) {
      Status st = w->wait(deadline);
      if (!st.isOk() && first.isOk()) first = st;
    }
    return first;
  }
  Status wait() override { return wait(Deadline::after(timeout_)); }
  bool isCompleted() const override {
    return std::all_of(works_.begin(), works_.end(), [](const WorkPtr& w) { return w->isCompleted(); });
  }
  Status status() const override {
    for (const auto& w : works_) {
      if (w->isCompleted() && !w->status().isOk()) return w->status();
    }
    return Status::ok();
  }
  uint64_t seq() const override { return seq_; }
  OpType opType() const override { return type_; }
  size_t bytes() const override { return bytes_; }

 private:
  const std::vector<WorkPtr> works_;
  const uint64_t seq_;
  const OpType type_;
  const size_t bytes_;
  const Duration timeout_;
};

}  // namespace

WorkPtr joinWorks(std::vector<WorkPtr> works, uint64_t seq, OpType type, size_t bytes,
                  Duration timeout) {
  std::vector<std::shared_ptr<CompletionWork>> inner;
  for (const auto& w : works) {
    auto cw = std::dynamic_pointer_cast<CompletionWork>(w);
    if (!cw) return std::make_shared<MultiWork>(std::move(works), seq, type, bytes, timeout);
    inner.push_back(std::move(cw));
  }
  auto outer = std::make_shared<CompletionWork>(seq, type, bytes, timeout);
  if (inner.empty()) {
    outer->complete(Status::ok());
    return outer;
  }
  struct Join {
    std::mutex mu;
    size_t remaining = 0;  // guarded by mu
    Status first;          // guarded by mu
  };
  auto join = std::make_shared<Join>();
  join->remaining = inner.size();
  for (auto& w : inner) {
    w->onComplete([join, outer](const Status& st) {
      Status result;
      {
        std::lock_guard<std::mutex> lock(join->mu);
        if (!st.isOk() && join->first.isOk()) join->first = st;
        if (--join->remaining > 0) return;
        result = join->first;
      }
      outer->complete(result);
    });
  }
  return outer;
}

Status ProcessGroup::validateMembers(const std::vector<Backend*>& members) {
  if (members.empty()) return invalidArgument("process group needs at least one member backend");
  for (const Backend* m : members) {
    if (m == nullptr) return invalidArgument("process group member is null");
  }
  const Backend& first = *members[0];
  bool cpu = false;
  for (const Backend* m : members) {
    if (m->rank() != first.rank() || m->size() != first.size()) {
      return invalidArgument("process group members disagree: " + first.name() + " is rank " +
                             std::to_string(first.rank()) + "/" + std::to_string(first.size()) +
                             ", " + m->name() + " is rank " + std::to_string(m->rank()) + "/" +
                             std::to_string(m->size()));
    }
    cpu = cpu || m->supportsDevice(DeviceType::kCpu);
  }
  if (!cpu) return invalidArgument("process group needs a member that supports CPU (control collectives run there)");
  return Status::ok();
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::create(std::vector<std::unique_ptr<Backend>> members) {
  std::vector<Backend*> raw;
  for (auto& m : members) raw.push_back(m.get());
  DDP_RETURN_IF_ERROR(validateMembers(raw));
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(members), std::move(raw)));
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::createUnowned(std::vector<Backend*> members) {
  DDP_RETURN_IF_ERROR(validateMembers(members));
  return std::unique_ptr<ProcessGroup>(new ProcessGroup({}, std::move(members)));
}

ProcessGroup::ProcessGroup(std::vector<std::unique_ptr<Backend>> owned, std::vector<Backend*> members)
    : owned_(std::move(owned)), members_(std::move(members)) {
  control_ = route(DeviceType::kCpu);
  DDP_CHECK(control_ != nullptr);
}

std::string ProcessGroup::name() const {
  std::string n = "pg(";
  for (size_t i = 0; i < members_.size(); ++i) n += (i ? "," : "") + members_[i]->name();
  return n + ")";
}

Backend* ProcessGroup::route(DeviceType type) const {
  for (Backend* m : members_) {
    if (m->supportsDevice(type)) return m;
  }
  return nullptr;
}

Result<Backend*> ProcessGroup::pick(const char* op, std::initializer_list<BufferView> views) const {
  const Device first = views.begin()->device;
  for (const BufferView& v : views) {
    if (v.device.type != first.type) {
      std::string devs;
      for (const BufferView& w : views) devs += (devs.empty() ? "" : " and ") + w.device.toString();
      return invalidArgument(std::string(op) + " mixes devices (" + devs + ") in one op; " + name() +
                             " routes each op to one backend by device");
    }
  }
  Backend* m = route(first.type);
  if (m == nullptr) {
    return invalidArgument(std::string(op) + " on " + first.toString() + ": no member of " + name() +
                           " supports that device" +
                           (first.isCuda() ? " (this build or job has no CUDA backend)" : ""));
  }
  return m;
}

template <typename F>
WorkPtr ProcessGroup::run(OpType type, size_t bytes, Result<Backend*> member, F&& issue) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t seq = ++seq_;
  if (!member.isOk()) return completedWork(member.status(), type, seq, bytes);
  Backend* m = *member;
  WorkPtr w = issue(*m);
  return joinWorks({std::move(w)}, seq, type, bytes, m->defaultTimeout());
}

WorkPtr ProcessGroup::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  return run(OpType::kAllreduce, buf.bytes(), pick("allreduce", {buf}),
             [&](Backend& m) { return m.allreduce(buf, op, opts); });
}

WorkPtr ProcessGroup::broadcast(BufferView buf, int root, const OpOptions& opts) {
  return run(OpType::kBroadcast, buf.bytes(), pick("broadcast", {buf}),
             [&](Backend& m) { return m.broadcast(buf, root, opts); });
}

WorkPtr ProcessGroup::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  return run(OpType::kAllgather, in.bytes(), pick("allgather", {in, out}),
             [&](Backend& m) { return m.allgather(in, out, opts); });
}

WorkPtr ProcessGroup::reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts) {
  return run(OpType::kReduceScatter, in.bytes(), pick("reduce_scatter", {in, out}),
             [&](Backend& m) { return m.reduceScatter(in, out, op, opts); });
}

WorkPtr ProcessGroup::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  // `out` matters on the root only.
  auto member = rank() == root ? pick("gather", {in, out}) : pick("gather", {in});
  return run(OpType::kGather, in.bytes(), member,
             [&](Backend& m) { return m.gather(in, out, root, opts); });
}

WorkPtr ProcessGroup::barrier(const OpOptions& opts) {
  return run(OpType::kBarrier, 0, control_, [&](Backend& m) { return m.barrier(opts); });
}

WorkPtr ProcessGroup::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return run(OpType::kSend, buf.bytes(), pick("send", {buf}),
             [&](Backend& m) { return m.send(buf, dst, tag, opts); });
}

WorkPtr ProcessGroup::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return run(OpType::kRecv, buf.bytes(), pick("recv", {buf}),
             [&](Backend& m) { return m.recv(buf, src, tag, opts); });
}

Status ProcessGroup::startCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < members_.size(); ++i) {
    Status st = members_[i]->startCoalescing();
    if (!st.isOk()) {
      // Close the scopes already opened (they hold nothing yet).
      for (size_t j = 0; j < i; ++j) (void)members_[j]->endCoalescing()->wait();
      return st.withContext(members_[i]->name() + " startCoalescing");
    }
  }
  return Status::ok();
}

WorkPtr ProcessGroup::endCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t seq = ++seq_;
  std::vector<WorkPtr> works;
  size_t bytes = 0;
  Duration timeout{};
  for (Backend* m : members_) {
    works.push_back(m->endCoalescing());
    bytes += works.back()->bytes();
    timeout = std::max(timeout, m->defaultTimeout());
  }
  return joinWorks(std::move(works), seq, OpType::kCoalesced, bytes, timeout);
}

void ProcessGroup::abort(const Status& reason) {
  for (Backend* m : members_) m->abort(reason);
}

bool ProcessGroup::isAborted() const {
  return std::any_of(members_.begin(), members_.end(), [](const Backend* m) { return m->isAborted(); });
}

}  // namespace ddp::comm
