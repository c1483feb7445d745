// TimerQueue: order, cancel, stop.
#include "common/http/timer_queue.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

namespace ddp::http {
namespace {

TEST(TimerQueueTest, RunsCallbacksInTimeOrderAndOnTime) {
  TimerQueue timers;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> order;
  std::vector<Duration> late;
  const TimePoint t0 = SystemClock::instance().now();
  for (int i : {3, 1, 2}) {
    const TimePoint at = t0 + std::chrono::milliseconds(20 * i);
    timers.schedule(at, [&, i, at] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      late.push_back(SystemClock::instance().now() - at);
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  for (Duration d : late) {
    EXPECT_GE(d, Duration::zero());
    EXPECT_LT(d, std::chrono::milliseconds(50));
  }
}

TEST(TimerQueueTest, CancelAndStop) {
  TimerQueue timers;
  bool ran = false;
  const auto id = timers.schedule(SystemClock::instance().now() + std::chrono::hours(1), [&] { ran = true; });
  EXPECT_EQ(timers.pending(), 1u);
  EXPECT_TRUE(timers.cancel(id));
  EXPECT_FALSE(timers.cancel(id));
  EXPECT_EQ(timers.pending(), 0u);
  int atStop = 0;
  timers.schedule(SystemClock::instance().now() + std::chrono::hours(1), [&] { ++atStop; });
  timers.schedule(SystemClock::instance().now() + std::chrono::hours(2), [&] { ++atStop; });
  timers.stop(/*runPending=*/true);
  EXPECT_EQ(atStop, 2);
  EXPECT_FALSE(ran);
  EXPECT_EQ(timers.schedule(SystemClock::instance().now(), [&] { ran = true; }), 0u);  // stopped
  timers.stop();
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace ddp::http
