#pragma once
// TimerQueue: runs callbacks at their time points on one thread of its own; the clock behind
// deferred replies (a long poll's expiry, a rendezvous deadline) so no request thread waits.
// Callbacks run one at a time, at most a few milliseconds late (the thread wakes at the
// earliest time point); they must be quick and must not wait on anything.
// Thread model: the constructor starts the thread; schedule() and cancel() are thread-safe
// (mu_); stop() (also the destructor) joins it and runs or drops what is still pending.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/clock.h"

namespace ddp::http {

class TimerQueue {
 public:
  using Id = uint64_t;

  TimerQueue();
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs `fn` at `at` (at once if it has passed). Returns an id for cancel(); 0 once stopped
  // (`fn` is then dropped).
  Id schedule(TimePoint at, std::function<void()> fn);
  // Drops a pending callback; false if it ran already (or is running) or the id is unknown.
  bool cancel(Id id);
  // Joins the thread. With `runPending` every callback still pending runs now, on the caller;
  // without, they are dropped. Idempotent.
  void stop(bool runPending = false);
  size_t pending() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<TimePoint, Id>, std::function<void()>> queue_;  // guarded by mu_
  std::unordered_map<Id, TimePoint> when_;                           // guarded by mu_
  Id nextId_ = 1;                                                    // guarded by mu_
  bool stopping_ = false;                                            // guarded by mu_
  std::thread thread_;
};

}  // namespace ddp::http
