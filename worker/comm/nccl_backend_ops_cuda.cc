// NcclBackend ops: argument validation, issue and coalescing (CUDA builds only).
#include "worker/comm/nccl_backend_impl.h"

namespace ddp::comm {

namespace {

// NCCL's own rule for a buffer: on this communicator's device, of a dtype NCCL carries.
std::string ncclBufferProblem(const BufferView& b, int device) {
  if (!b.device.isCuda() || b.device.index != device) {
    return "is on " + b.device.toString() + ", but this communicator runs on cuda:" + std::to_string(device);
  }
  ncclDataType_t dt;
  return ncclType(b.dtype, &dt) ? std::string() : std::string("has a dtype NCCL does not carry (") + dtypeName(b.dtype) + ")";
}

}  // namespace

// Validates, numbers and launches one op (or holds it in an open coalescing scope).
static WorkPtr issueOp(NcclBackend::Impl& m, const OpArgs& args, const OpOptions& opts) {
  NcclOp op{args};
  const int device = m.options.device;
  op.error = validateOpArgs(args, m.options.rank, m.options.size, "nccl",
                            [device](const BufferView& b) { return ncclBufferProblem(b, device); });
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
  return issueOp(*impl_, OpArgs::allreduce(buf, op), opts);
}

WorkPtr NcclBackend::broadcast(BufferView buf, int root, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::broadcast(buf, root), opts);
}

WorkPtr NcclBackend::allgather(BufferView in, BufferView out, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::allgather(in, out), opts);
}

WorkPtr NcclBackend::reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::reduceScatter(in, out, op), opts);
}

WorkPtr NcclBackend::gather(BufferView in, BufferView out, int root, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::gather(in, out, root), opts);
}

WorkPtr NcclBackend::barrier(const OpOptions& opts) { return issueOp(*impl_, OpArgs::barrier(), opts); }

// Note [NCCL semantics]: NCCL matches point-to-point ops per peer in order; the tag is checked
// (>= 0) like every backend's but not sent.
WorkPtr NcclBackend::send(BufferView buf, int dst, int tag, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::send(buf, dst, tag), opts);
}

WorkPtr NcclBackend::recv(BufferView buf, int src, int tag, const OpOptions& opts) {
  return issueOp(*impl_, OpArgs::recv(buf, src, tag), opts);
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
