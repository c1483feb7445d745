#pragma once
// GlooHeaderLane: exchanges the op headers (Note [Op header]) of queued collectives ahead of
// the executor, so that header latency overlaps the previous op's payload.
//
// Note [Header lane]
// Headers are posted at issue time in collective order (collSeq 1, 2, ...); the lane's thread
// exchanges them one after another with every peer (32-byte unbound-buffer sends/recvs on slots
// of their own) while the executor is still busy with earlier ops. When the executor reaches
// op k, its header has usually been compared already (if the lane has not started it yet, the
// executor exchanges it itself instead of waiting); await() returns the verdict: ok,
// InvalidArgument naming every rank's header on disagreement, or the transport error.
// Every rank posts the same collectives in the same order, so the lanes of all ranks pair up.
//
// Exchanges run over buffers of the communicator's GlooWaitSet (Note [Abortable waits]), so that
// abort releases one blocked on a peer that is gone even where signalling the transport cannot
// (a pair that had already failed).
//
// Thread model: post() from the backend under its lock (in collective order); await() from the
// executor; one thread started by the constructor, joined by stop()/the destructor (abort the
// wait set first if exchanges may be blocked on a dead peer).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "common/thread_priority.h"
#include "worker/comm/gloo_collectives.h"
#include "worker/comm/gloo_wait_set.h"
#include "worker/comm/header_exchange.h"

namespace gloo {
class Context;
}

namespace ddp::comm {

class GlooHeaderLane final : public HeaderExchange {
 public:
  // The lane's thread runs at `priority` (Note [Comm thread priority]); its exchanges use
  // buffers of `waits`.
  GlooHeaderLane(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits,
                 CommThreadPriority priority);
  ~GlooHeaderLane() override;
  GlooHeaderLane(const GlooHeaderLane&) = delete;
  GlooHeaderLane& operator=(const GlooHeaderLane&) = delete;

  // Queues the exchange of `mine` (mine.collSeq must be the next collective number).
  void post(const OpHeader& mine, std::string what, std::chrono::milliseconds timeout) override;
  // Blocks until the header of `collSeq` has been exchanged (or `abandon()` returns true, polled
  // every few milliseconds without the lane's lock held, or `deadline` passes); returns the
  // verdict.
  Status await(uint64_t collSeq, Deadline deadline, const std::function<bool()>& abandon) override;
  // Stops after the current exchange; pending ones are dropped. Joins the thread.
  void stop() override;

 private:
  void run();
  Status exchange(const Item& item);

  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<GlooWaitSet> waits_;
  const int rank_;
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;                // guarded by mu_
  std::map<uint64_t, Status> verdicts_;   // guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  std::thread thread_;
};

}  // namespace ddp::comm
