#pragma once
// Work: the handle of one asynchronous collective.
// Thread model: every method is thread-safe; wait() may be called from several threads.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/types.h"

namespace ddp::comm {

class Work {
 public:
  virtual ~Work() = default;

  // Blocks until the op completes or `deadline` passes. Returns the op's status, or Timeout if
  // the deadline passed first (the op itself keeps running; the backend's watchdog owns its fate).
  virtual Status wait(Deadline deadline) = 0;
  // Waits up to the op's own timeout.
  virtual Status wait() = 0;
  virtual bool isCompleted() const = 0;
  // The final status once completed; ok while still pending.
  virtual Status status() const = 0;

  virtual uint64_t seq() const = 0;   // per-backend issue sequence number (1, 2, ...)
  virtual OpType opType() const = 0;
  virtual size_t bytes() const = 0;   // payload bytes of this rank's input
};

using WorkPtr = std::shared_ptr<Work>;

// A Work completed by someone calling complete(status) once. Backends build on it.
// Thread model: thread-safe; callbacks registered with onComplete run on the completing thread
// (or immediately on the caller's thread if already complete), outside the lock.
class CompletionWork : public Work {
 public:
  CompletionWork(uint64_t seq, OpType type, size_t bytes, Duration timeout);

  Status wait(Deadline deadline) override;
  Status wait() override;
  bool isCompleted() const override;
  Status status() const override;
  uint64_t seq() const override { return seq_; }
  OpType opType() const override { return type_; }
  size_t bytes() const override { return bytes_; }
  Duration timeout() const { return timeout_; }

  // Marks the op done; later calls are ignored (first completion wins). Returns true if this
  // call completed it.
  bool complete(Status status);
  void onComplete(std::function<void(const Status&)> callback);

 private:
  const uint64_t seq_;
  const OpType type_;
  const size_t bytes_;
  const Duration timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;     // guarded by mu_
  Status status_;         // guarded by mu_
  std::vector<std::function<void(const Status&)>> callbacks_;  // guarded by mu_
};

// A Work that is already finished with `status` (e.g. validation failures, world size 1 no-ops).
WorkPtr completedWork(Status status, OpType type = OpType::kBarrier, uint64_t seq = 0, size_t bytes = 0);

}  // namespace ddp::comm
