// KeySpace (asynchronous waiters, quota, overflow) and KeySpaceStore (the Store view of it,
// run through the shared conformance suite).
#include "common/store/key_space.h"

#include <gtest/gtest.h>

#include <climits>
#include <thread>

#include "common/store/key_space_store.h"
#include "tests/support/store_conformance.h"

namespace ddp::comm {
namespace {

DDP_STORE_CONFORMANCE_TESTS(KeySpaceStoreConformance, [] {
  return conformance::sharedStore(std::make_shared<KeySpaceStore>(std::make_shared<KeySpace>()));
})

// Records each callback's status, in order.
struct Calls {
  std::vector<Status> seen;
  KeySpace::WaitCallback record() {
    return [this](const Status& st) { seen.push_back(st); };
  }
};

const Deadline kLater = Deadline::after(std::chrono::hours(1));

TEST(KeySpaceTest, WaiterRunsOnceEveryKeyExists) {
  KeySpace s;
  Calls calls;
  const auto id = s.waitAsync({"a", "b", "a"}, kLater, calls.record());
  EXPECT_NE(id, 0u);
  ASSERT_TRUE(s.set("a", "1").isOk());
  EXPECT_TRUE(calls.seen.empty());
  EXPECT_EQ(s.add("b", 2).valueOr(0), 2);  // any write that creates a key counts
  ASSERT_EQ(calls.seen.size(), 1u);
  EXPECT_TRUE(calls.seen[0].isOk());
  EXPECT_EQ(s.numWaiters(), 0u);
  EXPECT_FALSE(s.cancelWait(id));
  // Present already: runs at once, no id.
  EXPECT_EQ(s.waitAsync({"a"}, kLater, calls.record()), 0u);
  EXPECT_EQ(calls.seen.size(), 2u);
}

TEST(KeySpaceTest, KeyDeletedBeforeTheOthersAppearIsWaitedForAgain) {
  KeySpace s;
  ASSERT_TRUE(s.set("a", "1").isOk());
  Calls calls;
  s.waitAsync({"a", "b"}, kLater, calls.record());
  EXPECT_TRUE(s.deleteKey("a"));
  ASSERT_TRUE(s.set("b", "2").isOk());
  EXPECT_TRUE(calls.seen.empty());  // "a" is gone again
  EXPECT_EQ(s.compareSet("a", "", "x").valueOr("?"), "x");
  ASSERT_EQ(calls.seen.size(), 1u);
  EXPECT_TRUE(calls.seen[0].isOk());
}

TEST(KeySpaceTest, ExpireCancelAndClear) {
  KeySpace s;
  Calls calls;
  const TimePoint t0 = SystemClock::instance().now() + std::chrono::hours(1);
  const auto early = s.waitAsync({"x"}, Deadline(t0), calls.record());
  const auto late = s.waitAsync({"x", "y"}, Deadline(t0 + std::chrono::seconds(1)), calls.record());
  const auto cancelled = s.waitAsync({"z"}, Deadline(t0), calls.record());
  EXPECT_EQ(s.numWaiters(), 3u);
  EXPECT_TRUE(s.cancelWait(cancelled));
  EXPECT_EQ(s.expire(t0 - std::chrono::milliseconds(1)), 0u);
  EXPECT_EQ(s.expire(t0), 1u);  // `early` only
  ASSERT_EQ(calls.seen.size(), 1u);
  EXPECT_EQ(calls.seen[0].code(), StatusCode::kTimeout);
  EXPECT_NE(calls.seen[0].message().find("x"), std::string::npos);
  EXPECT_FALSE(s.expireWait(early));
  ASSERT_TRUE(s.set("x", "1").isOk());
  EXPECT_TRUE(s.expireWait(late));  // names only the key still missing
  ASSERT_EQ(calls.seen.size(), 2u);
  EXPECT_NE(calls.seen[1].message().find(": y"), std::string::npos) << calls.seen[1];
  s.waitAsync({"q"}, kLater, calls.record());
  s.clear("generation over");
  ASSERT_EQ(calls.seen.size(), 3u);
  EXPECT_EQ(calls.seen[2].code(), StatusCode::kAborted);
  EXPECT_EQ(calls.seen[2].message(), "generation over");
  EXPECT_EQ(s.numKeys(), 0u);
  EXPECT_EQ(s.bytes(), 0u);
  // A deadline that has passed answers at once.
  EXPECT_EQ(s.waitAsync({"never"}, Deadline::after(Duration::zero()), calls.record()), 0u);
  ASSERT_EQ(calls.seen.size(), 4u);
  EXPECT_EQ(calls.seen[3].code(), StatusCode::kTimeout);
}

TEST(KeySpaceTest, DestructorAbortsWaiters) {
  Calls calls;
  {
    KeySpace s;
    s.waitAsync({"k"}, kLater, calls.record());
  }
  ASSERT_EQ(calls.seen.size(), 1u);
  EXPECT_EQ(calls.seen[0].code(), StatusCode::kAborted);
}

TEST(KeySpaceTest, QuotaCountsKeysAndValues) {
  KeySpace s(/*quotaBytes=*/20);
  ASSERT_TRUE(s.set("key", "0123456789").isOk());  // 13 bytes
  EXPECT_EQ(s.bytes(), 13u);
  Status st = s.set("k2", "0123456");  // 9 more: 22 > 20
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st;
  EXPECT_NE(st.message().find("quota of 20 bytes"), std::string::npos) << st;
  EXPECT_FALSE(s.check({"k2"}));
  EXPECT_EQ(s.compareSet("key", "0123456789", std::string(30, 'x')).status().code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(s.set("key", "1").isOk());  // shrinking is fine
  EXPECT_EQ(s.bytes(), 4u);
  EXPECT_EQ(s.add("n", 123).valueOr(0), 123);
  EXPECT_EQ(s.bytes(), 8u);
  EXPECT_TRUE(s.deleteKey("key"));
  EXPECT_EQ(s.bytes(), 4u);
}

TEST(KeySpaceTest, AddRefusesNonIntegersAndOverflow) {
  KeySpace s;
  ASSERT_TRUE(s.set("s", "abc").isOk());
  EXPECT_EQ(s.add("s", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.add("n", INT64_MAX).valueOr(0), INT64_MAX);
  auto over = s.add("n", 1);
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("add of 1 to 9223372036854775807 overflows int64"), std::string::npos);
  EXPECT_EQ(s.add("n", -1).valueOr(0), INT64_MAX - 1);
}

TEST(KeySpaceTest, ManyWaitersOnOneKeyAreAllReleasedBySet) {
  KeySpace s;
  int released = 0;
  for (int i = 0; i < 1000; ++i) {
    s.waitAsync({"go"}, kLater, [&](const Status& st) { released += st.isOk() ? 1 : 0; });
  }
  EXPECT_EQ(s.numWaiters(), 1000u);
  ASSERT_TRUE(s.set("go", "now").isOk());
  EXPECT_EQ(released, 1000);
  EXPECT_EQ(s.numWaiters(), 0u);
}

TEST(KeySpaceStoreTest, BlockingGetTimesOutAndLeavesNoWaiter) {
  auto space = std::make_shared<KeySpace>();
  KeySpaceStore store(space);
  auto got = store.get("absent", Deadline::after(std::chrono::milliseconds(30)));
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout);
  EXPECT_NE(got.status().message().find("'absent'"), std::string::npos);
  EXPECT_EQ(space->numWaiters(), 0u);
}

}  // namespace
}  // namespace ddp::comm
