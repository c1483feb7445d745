#pragma once
// Watchdog: fails collective ops that pass their deadline. Backend-agnostic: a backend
// registers each op it starts (watch) and removes it when it ends (unwatch); when the injected
// Clock passes an op's deadline the watchdog calls `onTimeout` once for that op with a Timeout
// status naming the op, its sequence number, bytes and group. The backend then fails the Work,
// logs its FlightRecorder and aborts the communicator.
//
// Thread model: starts one thread (the poller), which checks every `pollInterval` of real time
// and is stopped and joined by stop() or the destructor. watch/unwatch/checkNow may be called
// from any thread. onTimeout runs on the poller thread (or the checkNow caller), outside the
// watchdog's lock, so it may call unwatch/watch. Tests drive time with FakeClock and either wait
// for the poller or call checkNow() themselves.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::comm {

struct WatchedOp {
  uint64_t seq = 0;
  std::string op;     // "allreduce", ...
  size_t bytes = 0;
  std::string group;  // e.g. "gloo:job/gen0 rank 1/4"
  Duration timeout{};
  TimePoint deadline{};
};

inline constexpr Duration kDefaultWatchdogPoll = std::chrono::milliseconds(20);

class Watchdog {
 public:
  using OnTimeout = std::function<void(const WatchedOp&, const Status&)>;

  // `clock` must outlive the watchdog.
  Watchdog(const Clock& clock, OnTimeout onTimeout, Duration pollInterval = kDefaultWatchdogPoll);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts watching; an op with the same seq replaces the earlier entry.
  void watch(WatchedOp op);
  // Stops watching (no-op if unknown or already fired).
  void unwatch(uint64_t seq);
  // Fires onTimeout for every watched op whose deadline is <= clock.now(); returns how many.
  int checkNow();
  size_t numWatched() const;
  // Stops the poller and joins it; idempotent. Ops still watched never fire afterwards.
  void stop();

  // "allreduce seq 7 (4096 bytes) on group G did not complete within 10.0m"
  static Status timeoutStatus(const WatchedOp& op);

 private:
  void run();

  const Clock& clock_;
  const OnTimeout onTimeout_;
  const Duration pollInterval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, WatchedOp> ops_;  // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::mutex fireMu_;                  // serialises checkNow() so an op fires once
  std::thread thread_;
};

}  // namespace ddp::comm
