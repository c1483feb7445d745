#pragma once
// Injectable clock and deadlines. Every blocking call in the project takes a Deadline; tests
// inject FakeClock to drive timeouts without sleeping.
// Thread model: SystemClock is stateless; FakeClock is thread-safe (its time is an atomic).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace ddp {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::steady_clock::time_point;
using namespace std::chrono_literals;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  static const SystemClock& instance();
};

// A clock that moves only when told to. Faked in tests: time itself.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(1)) : ns_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(Duration(ns_.load())); }
  void advance(Duration d) { ns_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> ns_;
};

// A point in time after which a blocking call gives up with a Timeout status.
class Deadline {
 public:
  explicit Deadline(TimePoint at) : at_(at) {}
  static Deadline after(Duration d, const Clock& clock = SystemClock::instance()) {
    return Deadline(clock.now() + d);
  }
  TimePoint at() const { return at_; }
  bool expired(const Clock& clock = SystemClock::instance()) const { return clock.now() >= at_; }
  // Time left, never negative.
  Duration remaining(const Clock& clock = SystemClock::instance()) const {
    auto r = at_ - clock.now();
    return r.count() > 0 ? std::chrono::duration_cast<Duration>(r) : Duration::zero();
  }
  // The earlier of the two.
  Deadline min(const Deadline& other) const { return at_ <= other.at_ ? *this : other; }

 private:
  TimePoint at_;
};

// "1.5s", "250ms", "10m"... for messages.
std::string formatDuration(Duration d);

// The wall clock (system_clock) as milliseconds since the Unix epoch: timestamps recorded in
// files and messages (checkpoint manifests, locks), not for measuring intervals.
int64_t unixMillisNow();

}  // namespace ddp
