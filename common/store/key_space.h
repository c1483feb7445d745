#pragma once
// KeySpace: one key namespace of the rendezvous store (a job's generation) held in memory, with
// a byte quota and asynchronous waiters. A waiter is a callback, not a blocked thread, so a
// server can keep thousands of long polls with no thread each (Note [Store long poll] in
// store_service.cc). Values are binary-safe.
//
// Waiters: waitAsync(keys, deadline, callback) calls callback(ok) once every key exists,
// callback(Timeout naming the missing keys) from expire()/expireWait() at or after the deadline,
// or callback(Aborted) from clear() and the destructor. The key space has no clock of its own:
// whoever registers waiters arranges for expire() or expireWait() to run (StoreService uses a
// TimerQueue), or cancels them with cancelWait().
//
// Quota: bytes() counts every key's and value's size; a write that would take it past the quota
// is refused with OutOfRange naming the quota (a write that shrinks usage is always allowed).
//
// Thread model: thread-safe (mu_). Callbacks run on the thread whose call completed them (set,
// add, compareSet, expire, clear, or waitAsync itself when the keys exist already), after mu_
// is released, in registration order; they must be quick and must not block.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::comm {

inline constexpr size_t kNoQuota = std::numeric_limits<size_t>::max();

class KeySpace {
 public:
  using WaitCallback = std::function<void(const Status&)>;
  using WaitId = uint64_t;  // 0: no waiter (the callback already ran)

  explicit KeySpace(size_t quotaBytes = kNoQuota);
  ~KeySpace();  // pending waiters get Aborted
  KeySpace(const KeySpace&) = delete;
  KeySpace& operator=(const KeySpace&) = delete;

  Status set(const std::string& key, std::string value);  // OutOfRange past the quota
  std::optional<std::string> get(const std::string& key) const;
  // Adds `delta` to the integer at `key` (absent counts as 0). InvalidArgument when the value is
  // not a decimal int64 or the sum overflows ("add of D to V overflows int64"); OutOfRange past
  // the quota.
  Result<int64_t> add(const std::string& key, int64_t delta);
  // c10d compareSet: sets `desired` if the value equals `expected` (or the key is absent and
  // `expected` is empty); returns the value after the call (`expected` for an absent key).
  Result<std::string> compareSet(const std::string& key, const std::string& expected, const std::string& desired);
  bool check(const std::vector<std::string>& keys) const;
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;  // absent ones, in order
  bool deleteKey(const std::string& key);  // true if it existed

  // See the header comment. Runs the callback at once (and returns 0) when every key exists or
  // the deadline has passed.
  WaitId waitAsync(std::vector<std::string> keys, Deadline deadline, WaitCallback callback);
  // Drops a waiter without calling it; false if it completed already.
  bool cancelWait(WaitId id);
  // Fails one waiter with Timeout now; false if it completed already.
  bool expireWait(WaitId id);
  // Fails every waiter whose deadline is at or before `now` with Timeout; returns how many.
  size_t expire(TimePoint now = SystemClock::instance().now());

  size_t bytes() const;
  size_t quotaBytes() const { return quota_; }
  size_t numKeys() const;
  size_t numWaiters() const;
  // Removes every key and fails every waiter with Aborted("<reason>").
  void clear(const std::string& reason = "key space cleared");

 private:
  struct Waiter {
    std::vector<std::string> keys;
    size_t missing = 0;  // distinct absent keys this waiter is indexed under
    WaitCallback callback;
    std::multimap<TimePoint, WaitId>::iterator byDeadline;
  };
  struct Ready {
    WaitCallback callback;
    Status status;
  };

  Status checkQuota(const std::string& key, size_t oldBytes, size_t newBytes) const;  // mu_ held
  void storeLocked(const std::string& key, std::string value, std::vector<Ready>* ready);
  void keyAppeared(const std::string& key, std::vector<Ready>* ready);
  WaitCallback removeWaiter(std::unordered_map<WaitId, Waiter>::iterator it);
  Status timeoutStatus(const Waiter& w) const;
  static void run(std::vector<Ready>& ready);

  const size_t quota_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> data_;                  // guarded by mu_
  size_t bytes_ = 0;                                                    // guarded by mu_
  WaitId nextWaitId_ = 1;                                               // guarded by mu_
  std::unordered_map<WaitId, Waiter> waiters_;                          // guarded by mu_
  std::unordered_map<std::string, std::unordered_set<WaitId>> waitingOn_;  // absent key -> waiters; mu_
  std::multimap<TimePoint, WaitId> deadlines_;                          // guarded by mu_
};

}  // namespace ddp::comm
