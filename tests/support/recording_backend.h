#pragma once
// RecordingBackend: a decorator over any comm::Backend that logs every issued op (type, seq,
// bytes, peer/root, issue and completion times on the steady clock, final status), so tests can
// prove timing properties such as "the first bucket's allreduce was issued before backward
// finished", or count the ops a component issued.
//
// It is also the project's fake for collective faults: FaultRule can delay the completion an op
// reports, make it report a chosen error, or drop it (never reach the inner backend, as a hung
// rank would; its Work then completes only on abort()). Tests that use rules must say so.
//
// Work returned: a CompletionWork with the inner op's seq, completed when the inner Work
// completes (callbacks when the inner Work is a CompletionWork, polling otherwise), after any
// injected delay, with the inner status or the injected one.
//
// Thread model: all methods thread-safe; the log is guarded by State::mu. One completer thread
// (started by the constructor, joined by the destructor) applies delays and polls inner Works
// that offer no callbacks. Work callbacks run on the inner backend's completing thread, or on the
// completer thread for delayed / polled ops. Destroying the decorator completes pending delayed
// ops at once; inner ops still running keep the shared state alive.

#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "worker/comm/backend.h"

namespace ddp::comm {

struct RecordedOp {
  uint64_t seq = 0;         // the inner Work's seq (the decorator adds none of its own)
  OpType type = OpType::kBarrier;
  size_t bytes = 0;
  int peer = -1;            // root for broadcast/gather, peer for send/recv, -1 otherwise
  bool inCoalescing = false;  // issued inside a coalescing scope
  TimePoint issued;
  std::optional<TimePoint> completed;  // when the decorator's Work completed
  Status status;            // final status (ok while pending)
  bool faulted = false;     // a FaultRule matched this op
};

// A fake fault: matches ops by type (any if unset) and ordinal among matching ops.
struct FaultRule {
  std::optional<OpType> type;
  uint64_t nth = 0;        // 1-based index among ops this rule's type matches; 0 = every one
  Duration delay{};        // completion is reported this much later
  Status status;           // non-ok: reported instead of the real result (the op still runs)
  bool drop = false;       // never issued to the inner backend; completes only on abort()
};

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(Backend& inner);                 // does not own `inner`
  explicit RecordingBackend(std::unique_ptr<Backend> inner);  // owns it
  ~RecordingBackend() override;

  // The log so far, in issue order.
  std::vector<RecordedOp> ops() const;
  // Blocks until at least `n` ops were issued or the deadline passes; returns whether they were.
  bool waitForOps(size_t n, Deadline deadline) const;
  void clear();
  void addFault(FaultRule rule);
  void clearFaults();

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  bool supportsDevice(DeviceType type) const override { return inner_->supportsDevice(type); }

  WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& opts = {}) override;
  WorkPtr broadcast(BufferView buf, int root, const OpOptions& opts = {}) override;
  WorkPtr allgather(BufferView in, BufferView out, const OpOptions& opts = {}) override;
  WorkPtr reduceScatter(BufferView in, BufferView out, ReduceOp op,
                        const OpOptions& opts = {}) override;
  WorkPtr gather(BufferView in, BufferView out, int root, const OpOptions& opts = {}) override;
  WorkPtr barrier(const OpOptions& opts = {}) override;
  WorkPtr send(BufferView buf, int dst, int tag, const OpOptions& opts = {}) override;
  WorkPtr recv(BufferView buf, int src, int tag, const OpOptions& opts = {}) override;

  Status startCoalescing() override;
  WorkPtr endCoalescing() override;

  void abort(const Status& reason) override;
  bool isAborted() const override { return inner_->isAborted(); }
  Duration defaultTimeout() const override { return inner_->defaultTimeout(); }

  struct State;  // shared with completion callbacks

 private:
  WorkPtr record(OpType type, size_t bytes, int peer, const OpOptions& opts,
                 const std::function<WorkPtr()>& issue);

  std::unique_ptr<Backend> owned_;
  Backend* inner_;
  std::shared_ptr<State> state_;
  std::thread completer_;
};

}  // namespace ddp::comm
