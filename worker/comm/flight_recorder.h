#pragma once
// FlightRecorder: a fixed-size ring of the last N collective ops (seq, type, bytes, issue /
// start / end times, state), dumped when something goes wrong (watchdog timeout, abort) so the
// log shows what each rank was doing. Backend-agnostic: GlooBackend and an NCCL backend record
// the same way.
// Thread model: thread-safe (mu_); every call is O(1) except snapshot()/dump().

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"

namespace ddp::comm {

enum class FlightState : uint8_t { kQueued = 0, kRunning, kCompleted, kFailed, kTimedOut, kAborted };
const char* flightStateName(FlightState s);

struct FlightRecord {
  uint64_t seq = 0;
  std::string op;        // "allreduce", "coalesced", ...
  size_t bytes = 0;
  TimePoint issued{};
  TimePoint started{};   // epoch when not started
  TimePoint ended{};     // epoch when not ended
  FlightState state = FlightState::kQueued;
  std::string detail;    // failure message, if any
};

inline constexpr size_t kDefaultFlightRecords = 64;

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity = kDefaultFlightRecords,
                          const Clock& clock = SystemClock::instance());

  void recordIssued(uint64_t seq, const std::string& op, size_t bytes);
  void recordStarted(uint64_t seq);
  // Ignored if `seq` has already left the ring.
  void recordEnded(uint64_t seq, FlightState state, const std::string& detail = {});

  // The records still held, oldest first.
  std::vector<FlightRecord> snapshot() const;
  // A multi-line text for the log: one line per record, times relative to the newest issue.
  std::string dump(const std::string& group) const;
  size_t capacity() const { return ring_.size(); }

 private:
  FlightRecord* find(uint64_t seq);  // requires mu_

  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<FlightRecord> ring_;  // guarded by mu_; slot seq % capacity
};

}  // namespace ddp::comm
