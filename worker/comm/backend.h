#pragma once
// Backend: the collective interface (Gloo on CPU, NCCL on GPU, or a user's own).
//
// Contract for every op:
//  - Returns immediately with a Work; the op runs asynchronously. Ops issued by one caller run
//    in issue order, and every rank must issue the same sequence of collectives.
//  - Buffers stay owned by the caller and must stay alive until the Work completes.
//  - Bad arguments (size mismatch with world, unsupported dtype/op, root out of range) yield an
//    already-failed Work with InvalidArgument; nothing throws.
//  - Ranks that disagree at run time (e.g. different sizes) get a failed Work on every rank that
//    sees the problem, never a crash; an op not finished by its timeout fails with Timeout.
//  - f16 / bf16 reductions accumulate in f32.
//  - After abort(), pending and future ops fail fast with Aborted.
// Thread model: all methods may be called from any thread; issue order is the order of the
// calls as serialised by the backend's own lock.

#include <memory>
#include <string>

#include "common/status.h"
#include "worker/comm/types.h"
#include "worker/comm/work.h"

namespace ddp::comm {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "gloo", "nccl", ...
  // Whether this backend can run ops on buffers of this device type.
  virtual bool supportsDevice(DeviceType type) const = 0;

  virtual WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& opts = {}) = 0;
  virtual WorkPtr broadcast(BufferView buf, int root, const OpOptions& opts = {}) = 0;
  // out.count == in.count * size(); rank r's input lands at out[r * in.count].
  virtual WorkPtr allgather(BufferView in, BufferView out, const OpOptions& opts = {}) = 0;
  // in.count == out.count * size(); rank r receives the reduction of every rank's chunk r.
  virtual WorkPtr reduceScatter(BufferView in, BufferView out, ReduceOp op,
                                const OpOptions& opts = {}) = 0;
  // On root, out.count == in.count * size(); `out` is ignored on other ranks.
  virtual WorkPtr gather(BufferView in, BufferView out, int root, const OpOptions& opts = {}) = 0;
  virtual WorkPtr barrier(const OpOptions& opts = {}) = 0;
  // Point to point. Matching send/recv pairs must agree on size and tag.
  virtual WorkPtr send(BufferView buf, int dst, int tag, const OpOptions& opts = {}) = 0;
  virtual WorkPtr recv(BufferView buf, int src, int tag, const OpOptions& opts = {}) = 0;

  // Coalescing: ops issued between startCoalescing() and endCoalescing() by this thread are
  // held and fire as one batch at endCoalescing() (results identical to issuing them one by
  // one). Each op's own Work completes with the batch; endCoalescing() returns one Work for the
  // whole batch (async style); waiting on it is the sync style. Scopes do not nest.
  virtual Status startCoalescing() = 0;
  virtual WorkPtr endCoalescing() = 0;

  // Fails every pending and future op with Aborted(reason) and releases peers' waits as far as
  // the transport allows. Never blocks for long; callable from any thread, idempotent.
  virtual void abort(const Status& reason) = 0;
  virtual bool isAborted() const = 0;

  // Default timeout for ops issued without OpOptions::timeout.
  virtual Duration defaultTimeout() const = 0;
};

// RAII coalescing scope: starts on construction; end() fires the batch and returns its Work.
// If end() is not called, the destructor fires the batch and waits for it (sync style).
class CoalescingScope {
 public:
  explicit CoalescingScope(Backend& backend) : backend_(backend), started_(backend.startCoalescing()) {}
  ~CoalescingScope() {
    if (started_.isOk() && !ended_) {
      auto w = backend_.endCoalescing();
      (void)w->wait();
    }
  }
  CoalescingScope(const CoalescingScope&) = delete;
  CoalescingScope& operator=(const CoalescingScope&) = delete;

  const Status& startStatus() const { return started_; }
  WorkPtr end() {
    ended_ = true;
    if (!started_.isOk()) return completedWork(started_, OpType::kCoalesced);
    return backend_.endCoalescing();
  }

 private:
  Backend& backend_;
  Status started_;
  bool ended_ = false;
};

}  // namespace ddp::comm
