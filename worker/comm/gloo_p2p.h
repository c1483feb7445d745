#pragma once
// GlooP2p: point-to-point send/recv for GlooBackend over Gloo unbound buffers.
//
// Note [P2p protocol]
// A send posts a 16-byte header (bytes, dtype) and then the payload, both without waiting; a
// recv posts the header receive only. post() never blocks on the peer, so two ranks that both
// send before they receive cannot deadlock. A completion thread then waits for each request
// in issue order: for a recv it reads the header, and if the sizes agree receives the payload
// into the caller's buffer; if they disagree it drains the payload into scratch memory and
// fails the recv with a message naming both sizes (Gloo itself would abort the process on a
// size mismatch). Sends complete once their payload has left. Sends and recvs are completed
// by two threads, each in issue order: a send's completion waits for the peer's payload
// receive, which the peer's recv thread posts, and a recv's completion only waits for peers'
// post() calls, so two ranks that both send before they receive cannot deadlock.
//
// Thread model: post() is called by one thread at a time (the backend's executor); the two
// completion threads are started by the constructor and joined by stop()/the destructor. Before
// stop() with requests still pending, signal the Gloo context (abort) so waits return.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "common/thread_priority.h"
#include "worker/comm/gloo_wait_set.h"
#include "worker/comm/types.h"
#include "worker/comm/work.h"

namespace gloo {
class Context;
}

namespace ddp::comm {

struct P2pRequest {
  bool isSend = true;
  BufferView buf;
  int peer = 0;
  int tag = 0;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<CompletionWork> work;
};

class GlooP2p {
 public:
  // The completion threads run at `priority` (Note [Comm thread priority]).
  // Transfers run over buffers of `waits`, which abort releases (Note [Abortable waits]).
  GlooP2p(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits, CommThreadPriority priority);
  ~GlooP2p();
  GlooP2p(const GlooP2p&) = delete;
  GlooP2p& operator=(const GlooP2p&) = delete;

  // Posts the transfer. An error (transport already closed) is returned, not thrown; the
  // request's Work is then left to the caller.
  Status post(P2pRequest req);
  // Whether requests are posted and not yet completed.
  bool busy() const;
  // Joins the completion thread after completing what is queued (waits return quickly once
  // the context has been signalled).
  void stop();

 private:
  struct Pending;
  struct Lane {
    std::deque<std::unique_ptr<Pending>> queue;  // guarded by mu_
    bool inFlight = false;                       // guarded by mu_
    std::thread thread;
  };
  void run(Lane& lane);
  Status complete(Pending& p);

  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<GlooWaitSet> waits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  Lane sends_;
  Lane recvs_;
};

}  // namespace ddp::comm
