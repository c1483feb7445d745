#include "common/store/in_memory_store.h"

#include <gtest/gtest.h>

#include <climits>
#include <thread>

namespace ddp::comm {
namespace {

TEST(InMemoryStoreTest, SetGetBinarySafe) {
  InMemoryStore store;
  std::string value("a\0b\xff", 4);
  ASSERT_TRUE(store.set("k", value).isOk());
  auto got = store.get("k", Deadline::after(1s));
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(*got, value);
}

TEST(InMemoryStoreTest, GetWaitsForSetAndTimesOut) {
  InMemoryStore store;
  std::thread setter([&] {
    std::this_thread::sleep_for(20ms);
    (void)store.set("late", "v");
  });
  auto got = store.get("late", Deadline::after(5s));
  setter.join();
  ASSERT_TRUE(got.isOk());
  auto missing = store.get("never", Deadline::after(30ms));
  EXPECT_EQ(missing.status().code(), StatusCode::kTimeout);
  EXPECT_NE(missing.status().message().find("never"), std::string::npos);
}

TEST(InMemoryStoreTest, AddCompareSetCheckDelete) {
  InMemoryStore store;
  EXPECT_EQ(*store.add("n", 3), 3);
  EXPECT_EQ(*store.add("n", -5), -2);
  (void)store.set("s", "x");
  EXPECT_EQ(store.add("s", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*store.compareSet("c", "", "first"), "first");
  EXPECT_EQ(*store.compareSet("c", "wrong", "second"), "first");
  EXPECT_EQ(*store.compareSet("c", "first", "second"), "second");
  EXPECT_TRUE(*store.check({"n", "s", "c"}));
  EXPECT_FALSE(*store.check({"n", "zz"}));
  EXPECT_TRUE(*store.deleteKey("n"));
  EXPECT_FALSE(*store.deleteKey("n"));
  Status w = store.wait({"s", "gone"}, Deadline::after(20ms));
  EXPECT_EQ(w.code(), StatusCode::kTimeout);
  EXPECT_NE(w.message().find("gone"), std::string::npos);
}

TEST(InMemoryStoreTest, AddRefusesOverflowAndKeepsTheValue) {
  InMemoryStore store;
  EXPECT_EQ(store.add("n", INT64_MAX).valueOr(0), INT64_MAX);
  auto over = store.add("n", 1);
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("add of 1 to 9223372036854775807 overflows int64"), std::string::npos)
      << over.status();
  EXPECT_EQ(store.get("n", Deadline::after(1s)).valueOr("?"), "9223372036854775807");
  EXPECT_EQ(store.add("m", INT64_MIN).valueOr(0), INT64_MIN);
  EXPECT_EQ(store.add("m", -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.add("m", INT64_MAX).valueOr(0), -1);
}

}  // namespace
}  // namespace ddp::comm
