// GlooStoreAdapter: keys namespaced per generation, binary-safe values, deadlines that turn
// into Gloo's exception type instead of blocking forever.
#include "worker/comm/gloo_store_adapter.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include <chrono>

#include "common/store/in_memory_store.h"

namespace ddp::comm {
namespace {

TEST(GlooStoreAdapterTest, NamespacesKeysPerPrefix) {
  InMemoryStore store;
  GlooStoreAdapter gen0(store, "job/gen0", Deadline::after(5s));
  GlooStoreAdapter gen1(store, "job/gen1", Deadline::after(5s));
  const std::vector<char> value{'a', '\0', 'b'};
  gen0.set("rank_0", value);
  EXPECT_EQ(*store.get("gloo/job/gen0/rank_0", Deadline::after(1s)), std::string("a\0b", 3));
  EXPECT_EQ(gen0.get("rank_0"), value);
  EXPECT_FALSE(*store.check({gen1.fullKey("rank_0")}));  // the next generation starts clean
}

TEST(GlooStoreAdapterTest, MissingKeysThrowGlooErrorsAtTheDeadline) {
  InMemoryStore store;
  GlooStoreAdapter a(store, "p", Deadline::after(50ms));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(a.get("never"), ::gloo::IoException);
  EXPECT_THROW(a.wait({"never"}), ::gloo::IoException);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  GlooStoreAdapter b(store, "p", Deadline::after(10s));
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_THROW(b.wait({"never"}, std::chrono::milliseconds(30)), ::gloo::IoException);
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 5s);
  (void)store.set("gloo/p/there", "x");
  EXPECT_NO_THROW(b.wait({"there"}));
}

}  // namespace
}  // namespace ddp::comm
