// Watchdog with an injected FakeClock (faked: time). Overdue ops fire once with a Timeout
// naming op, seq, bytes and group; unwatched ops never fire; the poller fires on its own.
#include "worker/comm/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace ddp::comm {
namespace {

struct Fired {
  std::mutex mu;
  std::vector<std::pair<WatchedOp, Status>> ops;
  size_t size() {
    std::lock_guard<std::mutex> l(mu);
    return ops.size();
  }
};

WatchedOp op(uint64_t seq, const FakeClock& clock, Duration timeout) {
  return WatchedOp{seq, "allreduce", 4096, "gloo:job/gen0 rank 1/4", timeout, clock.now() + timeout};
}

TEST(WatchdogTest, FiresOnceWhenOverdueWithAClearMessage) {
  FakeClock clock;
  Fired fired;
  Watchdog wd(clock, [&](const WatchedOp& o, const Status& s) {
    std::lock_guard<std::mutex> l(fired.mu);
    fired.ops.emplace_back(o, s);
  }, std::chrono::hours(1));  // poller effectively idle: the test drives checkNow()
  wd.watch(op(3, clock, 10s));
  wd.watch(op(4, clock, 20s));
  EXPECT_EQ(wd.checkNow(), 0);
  clock.advance(10s);
  EXPECT_EQ(wd.checkNow(), 1);
  EXPECT_EQ(wd.checkNow(), 0);  // once only
  ASSERT_EQ(fired.size(), 1u);
  const Status& s = fired.ops[0].second;
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.message().find("allreduce seq 3 (4096 bytes) on group gloo:job/gen0 rank 1/4 did not complete within 10s"), 0u) << s;
  EXPECT_EQ(wd.numWatched(), 1u);
  wd.unwatch(4);
  clock.advance(1h);
  EXPECT_EQ(wd.checkNow(), 0);
}

TEST(WatchdogTest, PollerFiresWithoutHelp) {
  FakeClock clock;
  std::atomic<int> fired{0};
  Watchdog wd(clock, [&](const WatchedOp&, const Status&) { ++fired; }, 1ms);
  wd.watch(op(1, clock, 5s));
  clock.advance(6s);
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (fired.load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(fired.load(), 1);
}

TEST(WatchdogTest, CallbackMayUnwatchAndStopPreventsFiring) {
  FakeClock clock;
  int fired = 0;
  Watchdog* self = nullptr;
  Watchdog wd(clock, [&](const WatchedOp& o, const Status&) {
    ++fired;
    self->unwatch(o.seq + 1);  // re-entrant use from the callback must not deadlock
  }, std::chrono::hours(1));
  self = &wd;
  wd.watch(op(1, clock, 1s));
  wd.watch(op(2, clock, 100s));
  clock.advance(2s);
  EXPECT_EQ(wd.checkNow(), 1);
  EXPECT_EQ(wd.numWatched(), 0u);
  wd.watch(op(5, clock, 1s));
  wd.stop();
  clock.advance(1h);
  EXPECT_EQ(wd.checkNow(), 0);
  EXPECT_EQ(fired, 1);
}

}  // namespace
}  // namespace ddp::comm
