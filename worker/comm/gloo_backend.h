#pragma once
// GlooBackend: the CPU collective backend over Gloo's TCP transport (loopback or a real
// network), rendezvous through our Store. Implements comm::Backend (see backend.h for the
// contract every op follows).
//
// Thread model: every public method may be called from any thread. The backend starts up to
// five threads, all joined by the destructor:
//  - the executor: runs collectives one at a time in issue order (Note [Executor order]);
//  - the header lane (GlooHeaderLane), ahead of the executor, unless the ranks share a futex
//    page (Note [Shared header exchange]: the executor compares headers itself);
//  - two p2p completion threads (GlooP2p);
//  - the watchdog poller (Watchdog).
// Gloo itself runs one device-loop thread per backend for socket I/O.
// Shared state is guarded by mu_. Callbacks on Works run on the completing thread.
//
// Note [Executor order]
// Every op gets the next sequence number under mu_ and is appended to one FIFO queue; the
// executor pops and runs them in that order, so ops overlap with the caller's compute but
// never with each other, and every rank runs its collectives in its issue order. Each
// collective's OpHeader (Note [Op header]) is exchanged by GlooHeaderLane as soon as it is
// issued (Note [Header lane]), or by the executor through shared memory on one host (Note
// [Shared header exchange]); the executor checks the verdict before moving any payload, so
// ranks that disagree fail cleanly. P2p ops are posted in queue order and completed by GlooP2p (Note [P2p protocol]).
//
// Note [Abort]
// abort() marks the backend aborted, fails every queued and running op's Work with Aborted at
// once (callers unblock within milliseconds), and signals the Gloo transport context: every
// pair gets an exception and closes its socket, which wakes any Gloo wait on this rank (pending
// unbound-buffer sends/recvs are signalled) and makes peers see "connection closed" on theirs.
// The executor then drains. The communicator is unusable afterwards; build the next
// generation with a new prefix. A Gloo exception inside an op (closed connection, peer
// disagreement Gloo detects itself, a Gloo timeout) fails that op with the message and
// aborts the communicator the same way: its transport state is unknown.
// Caveat: a Work failed by abort while its op was running means Gloo may still touch the
// caller's buffers until the executor leaves the op (at most a few milliseconds after the
// sockets close); callers that free buffers right after an abort should destroy the backend
// first (the destructor joins the executor).
//
// Note [Coalescing]
// Between startCoalescing() and endCoalescing(), ops issued by the thread that started the
// scope are validated and held. At the end they run as one queue entry with one header
// exchange (describing all members): allreduces are grouped by (reduce op, dtype) and each
// group runs as one Gloo allreduce over a flattened scratch buffer (copy in, reduce, copy
// out); other collectives run in issue order; p2p members are all posted before any is
// waited (batched send/recv). A batch of only p2p ops involves only its peers (no header).
// Members must not overlap in memory (as with NCCL groups).

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "worker/comm/backend.h"
#include "worker/comm/flight_recorder.h"
#include "worker/comm/gloo_options.h"
#include "worker/comm/op_args.h"
#include "common/store/store.h"
#include "worker/comm/watchdog.h"

namespace gloo {
class Context;
}

namespace ddp::comm {

class CrossMemory;
class SharedWords;
class GlooCollectives;
class HeaderExchange;
class GlooP2p;
class GlooWaitSet;

class GlooBackend final : public Backend {
 public:
  // Validates `options`, rendezvous through `store` under options.prefix and connects the full
  // mesh; blocks until every rank has joined or options.connectTimeout passes. `store` is only
  // used during create().
  static Result<std::unique_ptr<GlooBackend>> create(const GlooOptions& options, Store& store);

  ~GlooBackend() override;
  GlooBackend(const GlooBackend&) = delete;
  GlooBackend& operator=(const GlooBackend&) = delete;

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  std::string name() const override { return "gloo"; }
  bool supportsDevice(DeviceType type) const override { return type == DeviceType::kCpu; }
  // True when every rank agreed at create() that large allreduces read peers' memory (Note
  // [Same-host allreduce]).
  bool readsPeerMemory() const { return readsPeerMemory_; }
  // True when the ranks also share the futex page (Note [Shared-memory phases]): the same-host
  // path from kSharedWordsMinBytes, op headers through the page.
  bool sharesPage() const { return sharesPage_; }

  WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& opts = {}) override;
  WorkPtr broadcast(BufferView buf, int root, const OpOptions& opts = {}) override;
  WorkPtr allgather(BufferView in, BufferView out, const OpOptions& opts = {}) override;
  WorkPtr reduceScatter(BufferView in, BufferView out, ReduceOp op, const OpOptions& opts = {}) override;
  WorkPtr gather(BufferView in, BufferView out, int root, const OpOptions& opts = {}) override;
  WorkPtr barrier(const OpOptions& opts = {}) override;
  WorkPtr send(BufferView buf, int dst, int tag, const OpOptions& opts = {}) override;
  WorkPtr recv(BufferView buf, int src, int tag, const OpOptions& opts = {}) override;

  Status startCoalescing() override;
  WorkPtr endCoalescing() override;

  void abort(const Status& reason) override;
  bool isAborted() const override;
  Duration defaultTimeout() const override { return options_.timeout; }

  // "gloo:<prefix> rank r/n": names this communicator in messages.
  const std::string& groupName() const { return group_; }
  const FlightRecorder& flightRecorder() const { return *flight_; }
  // The status every op fails with once aborted (ok while healthy).
  Status abortStatus() const;

  // One op as queued (public for the implementation file's helpers; not an API).
  struct Op;
  struct Task;
  struct Live;

 private:
  GlooBackend(const GlooOptions& options, std::shared_ptr<::gloo::Context> context,
              std::shared_ptr<const CrossMemory> crossMemory, std::shared_ptr<SharedWords> sharedWords);

  WorkPtr issue(const OpArgs& args, const OpOptions& opts);
  void enqueue(std::shared_ptr<Task> task);  // requires mu_ held
  void executorLoop();
  void runTask(Task& task);
  Status runCollective(const Op& op, uint64_t collSeq, std::chrono::milliseconds timeout);
  Status runBatch(Task& task, std::chrono::milliseconds timeout);
  // The header verdict of collective `collSeq` (Note [Header lane]); throws gloo::IoException
  // when the exchange itself failed (the communicator is then broken).
  Status awaitHeader(uint64_t collSeq, std::chrono::milliseconds timeout);
  // Completes the task's members with `st`; posted p2p members only if `p2pToo`.
  void finishTask(Task& task, const Status& st, bool p2pToo);
  void onWatchdogTimeout(const WatchedOp& op, const Status& st);
  void signalTransport(const std::string& msg);
  // abort(), running `failCulprit` (which completes the op that caused it with its own status)
  // after the aborted flag is set and before the other ops fail.
  void abortWith(const Status& reason, const std::function<void()>& failCulprit);
  Status validateOp(const Op& op) const;
  // Records the op in the flight recorder, watchdog and live table; its completion undoes that.
  void track(const std::shared_ptr<CompletionWork>& work, const std::string& name);

  const GlooOptions options_;
  const Clock& clock_;
  const std::string group_;
  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<GlooWaitSet> waits_;     // every op's buffers; abort releases their waits
  std::unique_ptr<GlooCollectives> coll_;  // executor thread only
  bool readsPeerMemory_ = false;           // set by the constructor
  bool sharesPage_ = false;                // set by the constructor
  std::unique_ptr<GlooP2p> p2p_;
  std::unique_ptr<HeaderExchange> lane_;  // GlooHeaderLane, or SharedHeaderExchange on one host
  std::unique_ptr<FlightRecorder> flight_;
  std::unique_ptr<Watchdog> watchdog_;
  // Works of ops not yet complete, by seq (own mutex: Work callbacks never take mu_).
  std::shared_ptr<Live> live_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;   // guarded by mu_
  std::shared_ptr<Task> running_;             // guarded by mu_
  uint64_t nextSeq_ = 1;                      // guarded by mu_
  uint64_t nextCollSeq_ = 1;                  // guarded by mu_
  bool aborted_ = false;                      // guarded by mu_
  Status abortStatus_;                        // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  bool coalescing_ = false;                   // guarded by mu_
  std::thread::id coalescingThread_;          // guarded by mu_
  std::vector<Op> held_;                      // guarded by mu_: the open scope's members
  std::thread executor_;
};

}  // namespace ddp::comm
