// NcclBackend ops: argument validation, issue and coalescing (CUDA builds only).
#include "worker/comm/nccl_backend_impl.h"

namespace ddp::comm {

namespace {

Status checkView(const BufferView& b, const char* what, int device) {
  if (!b.device.isCuda() || b.device.index != device) {
    return invalidArgument(std::string("nccl: ") + what + " on " + b.device.toString() +
                           ", but this communicator runs on cuda:" + std::to_string(device));
  }
  if (b.count > 0 && b.data == nullptr) return invalidArgument(std::string("nccl: ") + what + " is null");
  ncclDataType_t dt;
  if (!ncclType(b.dtype, &dt)) return invalidArgument(std::string("nccl: ") + what + " has an unsupported dtype");
  return Status::ok();
}

Status sizeError(const char* op, const BufferView& big, const BufferView& small, int world,
                 const char* relation) {
  return invalidArgument(std::string("nccl: ") + op + " needs " + relation + " (" +
                         std::to_string(small.count) + " x " + std::to_string(world) + " " +
                         dtypeName(small.dtype) + "), got " + std::to_string(big.count) + " " +
                         dtypeName(big.dtype));
}

}  // namespace

// Validates, numbers and launches one op (or holds it in an open coalescing scope).
static WorkPtr issueOp(NcclBackend::Impl& m, NcclOp op, const OpOptions& opts) {
  op.timeout = opts.timeout.value_or(m.options.timeout);
  std::lock_guard<std::mutex> lock(m.issueMu);
  const uint64_t seq = ++m.seq;
  op.work = std::make_shared<CompletionWork>(seq, op.type, op.in.bytes(), op.timeout);
  if (m.aborted.load()) {
    op.work->complete(m.currentAbortStatus());
    return op.work;
  }
  if (!op.error.isOk()) {
    op.work->complete(op.error);
    return op.work;
  }
  m.track(op.work);
  if (m.coalescing && std::this_thread::get_id() == m.coalescingThread) {
    m.held.push_back(op);
    return op.work;
  }
  auto work = op.work;
  Status st = m.launch({op}, seq, opTypeName(op.type), op.in.bytes(), {work});
  if (!st.isOk()) {
    work->complete(st);
    // The communicator's state is unknown after a failed enqueue (Note [NCCL abort]).
    m.abortWith(abortedError("communicator aborted after a failed " + std::string(opTypeName(op.type)) +
                             ": " + st.message()));
  }
  return work;
}

WorkPtr NcclBackend::allreduce(BufferView buf, ReduceOp op, const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kAllreduce;
  o.in = buf;
  o.reduce = op;
  o.error = checkView(buf, "allreduce buffer", impl_->options.device);
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kBroadcast;
  o.in = buf;
  o.peer = root;
  o.error = checkView(buf, "broadcast buffer", impl_->options.device);
  if (o.error.isOk() && (root < 0 || root >= size())) {
    o.error = invalidArgument("nccl: broadcast root " + std::to_string(root) + " out of range [0, " +
                              std::to_string(size()) + ")");
  }
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kAllgather;
  o.in = in;
  o.out = out;
  o.error = checkView(in, "allgather input", impl_->options.device);
  if (o.error.isOk()) o.error = checkView(out, "allgather output", impl_->options.device);
  if (o.error.isOk() && (out.count != in.count * size() || out.dtype != in.dtype)) {
    o.error = sizeError("allgather", out, in, size(), "output = input x world");
  }
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kReduceScatter;
  o.in = in;
  o.out = out;
  o.reduce = op;
  o.error = checkView(in, "reduce_scatter input", impl_->options.device);
  if (o.error.isOk()) o.error = checkView(out, "reduce_scatter output", impl_->options.device);
  if (o.error.isOk() && (in.count != out.count * size() || out.dtype != in.dtype)) {
    o.error = sizeError("reduce_scatter", in, out, size(), "input = output x world");
  }
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kGather;
  o.in = in;
  o.out = out;
  o.peer = root;
  o.error = checkView(in, "gather input", impl_->options.device);
  if (o.error.isOk() && (root < 0 || root >= size())) {
    o.error = invalidArgument("nccl: gather root " + std::to_string(root) + " out of range [0, " +
                              std::to_string(size()) + ")");
  }
  if (o.error.isOk() && rank() == root) {
    o.error = checkView(out, "gather output", impl_->options.device);
    if (o.error.isOk() && (out.count != in.count * size() || out.dtype != in.dtype)) {
      o.error = sizeError("gather", out, in, size(), "output on the root = input x world");
    }
  }
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::barrier(const OpOptions& opts) {
  NcclOp o;
  o.type = OpType::kBarrier;
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  (void)tag;  // Note [NCCL semantics]: NCCL matches per peer in order
  NcclOp o;
  o.type = OpType::kSend;
  o.in = buf;
  o.peer = dst;
  o.error = checkView(buf, "send buffer", impl_->options.device);
  if (o.error.isOk() && (dst < 0 || dst >= size() || dst == rank())) {
    o.error = invalidArgument("nccl: send destination " + std::to_string(dst) + " invalid for rank " +
                              std::to_string(rank()) + " of " + std::to_string(size()));
  }
  return issueOp(*impl_, std::move(o), opts);
}

WorkPtr NcclBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  (void)tag;
  NcclOp o;
  o.type = OpType::kRecv;
  o.in = buf;
  o.peer = src;
  o.error = checkView(buf, "recv buffer", impl_->options.device);
  if (o.error.isOk() && (src < 0 || src >= size() || src == rank())) {
    o.error = invalidArgument("nccl: recv source " + std::to_string(src) + " invalid for rank " +
                              std::to_string(rank()) + " of " + std::to_string(size()));
  }
  return issueOp(*impl_, std::move(o), opts);
}

Status NcclBackend::startCoalescing() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.issueMu);
  if (m.aborted.load()) return m.currentAbortStatus();
  if (m.coalescing) return failedPrecondition("nccl: a coalescing scope is already open (scopes do not nest)");
  m.coalescing = true;
  m.coalescingThread = std::this_thread::get_id();
  return Status::ok();
}

WorkPtr NcclBackend::endCoalescing() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.issueMu);
  if (!m.coalescing) {
    return completedWork(m.aborted.load() ? m.currentAbortStatus()
                                          : failedPrecondition("nccl: endCoalescing without startCoalescing"),
                         OpType::kCoalesced);
  }
  if (std::this_thread::get_id() != m.coalescingThread) {
    return completedWork(failedPrecondition("nccl: endCoalescing from a thread other than the scope's"),
                         OpType::kCoalesced);
  }
  m.coalescing = false;
  std::vector<NcclOp> held;
  held.swap(m.held);
  size_t bytes = 0;
  Duration timeout = m.options.timeout;
  std::vector<std::shared_ptr<CompletionWork>> works;
  for (const auto& op : held) {
    bytes += op.in.bytes();
    timeout = std::max(timeout, op.timeout);
    works.push_back(op.work);
  }
  const uint64_t seq = ++m.seq;
  auto batch = std::make_shared<CompletionWork>(seq, OpType::kCoalesced, bytes, timeout);
  works.push_back(batch);
  if (held.empty()) {
    batch->complete(Status::ok());
    return batch;
  }
  if (m.aborted.load()) {
    for (auto& w : works) w->complete(m.currentAbortStatus());
    return batch;
  }
  m.track(batch);
  Status st = m.launch(held, seq, opTypeName(OpType::kCoalesced), bytes, works);
  if (!st.isOk()) {
    for (auto& w : works) w->complete(st);
    m.abortWith(abortedError("communicator aborted after a failed coalesced batch: " + st.message()));
  }
  return batch;
}

}  // namespace ddp::comm
