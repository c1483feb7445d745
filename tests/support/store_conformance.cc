#include "tests/support/store_conformance.h"

#include <atomic>
#include <thread>

namespace ddp::comm::conformance {
namespace {

class SharedStore final : public StoreUnderTest {
 public:
  explicit SharedStore(std::shared_ptr<Store> s) : store_(std::move(s)) {}
  std::shared_ptr<Store> connect() override { return store_; }

 private:
  std::shared_ptr<Store> store_;
};

std::string allBytes() {
  std::string v;
  for (int i = 0; i < 256; ++i) v.push_back(static_cast<char>(i));
  return v;
}

}  // namespace

std::unique_ptr<StoreUnderTest> sharedStore(std::shared_ptr<Store> store) {
  return std::make_unique<SharedStore>(std::move(store));
}

void checkSetGetBinarySafe(StoreUnderTest& s) {
  auto store = s.connect();
  const std::string binary = allBytes() + std::string("\0\0tail", 6);
  std::string big(200 * 1024, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) % 251);
  const std::pair<std::string, std::string> cases[] = {
      {"plain", "value"},
      {"binary", binary},
      {"empty", ""},
      {"big", big},
      {"with/slashes and spaces?&=%+#", "x"},
      {"unicode-\xc3\xa9\xe2\x82\xac", "\xff\xfe"},
  };
  for (const auto& [k, v] : cases) ASSERT_TRUE(store->set(k, v).isOk()) << k;
  auto other = s.connect();
  for (const auto& [k, v] : cases) {
    auto got = other->get(k, Deadline::after(5s));
    ASSERT_TRUE(got.isOk()) << k << ": " << got.status();
    EXPECT_EQ(got->size(), v.size()) << k;
    EXPECT_TRUE(*got == v) << k;
  }
}

void checkOverwriteAndDelete(StoreUnderTest& s) {
  auto store = s.connect();
  ASSERT_TRUE(store->set("k", "one").isOk());
  ASSERT_TRUE(store->set("k", "two").isOk());
  EXPECT_EQ(store->get("k", Deadline::after(5s)).valueOr("?"), "two");
  auto del = store->deleteKey("k");
  ASSERT_TRUE(del.isOk());
  EXPECT_TRUE(*del);
  del = store->deleteKey("k");
  ASSERT_TRUE(del.isOk());
  EXPECT_FALSE(*del);
  auto gone = store->get("k", Deadline::after(30ms));
  EXPECT_EQ(gone.status().code(), StatusCode::kTimeout) << gone.status();
}

void checkGetBlocksUntilAnotherClientSets(StoreUnderTest& s) {
  auto waiter = s.connect();
  auto setter = s.connect();
  std::atomic<bool> set{false};
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    set = true;
    EXPECT_TRUE(setter->set("late", std::string("v\0v", 3)).isOk());
  });
  auto start = std::chrono::steady_clock::now();
  auto got = waiter->get("late", Deadline::after(10s));
  auto took = std::chrono::steady_clock::now() - start;
  t.join();
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_TRUE(set.load());
  EXPECT_EQ(*got, std::string("v\0v", 3));
  EXPECT_GE(took, 90ms);
  EXPECT_LT(took, 5s);
}

void checkGetTimesOutNamingTheKey(StoreUnderTest& s) {
  auto store = s.connect();
  auto start = std::chrono::steady_clock::now();
  auto got = store->get("never-set", Deadline::after(150ms));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout) << got.status();
  EXPECT_NE(got.status().message().find("never-set"), std::string::npos) << got.status();
  EXPECT_GE(took, 140ms);
  EXPECT_LT(took, 3s);
}

void checkAdd(StoreUnderTest& s) {
  auto store = s.connect();
  EXPECT_EQ(store->add("n", 3).valueOr(-999), 3);
  EXPECT_EQ(store->add("n", -5).valueOr(-999), -2);
  EXPECT_EQ(store->add("n", 0).valueOr(-999), -2);
  EXPECT_EQ(store->get("n", Deadline::after(5s)).valueOr("?"), "-2");
  const int64_t big = int64_t(1) << 60;
  EXPECT_EQ(store->add("big", big).valueOr(0), big);
  ASSERT_TRUE(store->set("s", "not a number").isOk());
  auto bad = store->add("s", 1);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status();
  EXPECT_EQ(store->get("s", Deadline::after(5s)).valueOr("?"), "not a number");
}

void checkConcurrentAddsAreAtomic(StoreUnderTest& s) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto c = s.connect();
      for (int i = 0; i < kAdds; ++i) EXPECT_TRUE(c->add("counter", 2).isOk());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.connect()->add("counter", 0).valueOr(-1), kThreads * kAdds * 2);
}

void checkCompareSet(StoreUnderTest& s) {
  auto store = s.connect();
  // Absent key and empty expected: sets.
  EXPECT_EQ(store->compareSet("c", "", "first").valueOr("?"), "first");
  // Wrong expected: unchanged, returns the current value.
  EXPECT_EQ(store->compareSet("c", "wrong", "second").valueOr("?"), "first");
  EXPECT_EQ(store->compareSet("c", "first", std::string("se\0nd", 5)).valueOr("?"),
            std::string("se\0nd", 5));
  EXPECT_EQ(store->get("c", Deadline::after(5s)).valueOr("?"), std::string("se\0nd", 5));
  // Absent key and non-empty expected: not set, returns `expected`.
  EXPECT_EQ(store->compareSet("absent", "x", "y").valueOr("?"), "x");
  EXPECT_FALSE(store->check({"absent"}).valueOr(true));
}

void checkCheck(StoreUnderTest& s) {
  auto store = s.connect();
  ASSERT_TRUE(store->set("a", "1").isOk());
  ASSERT_TRUE(store->set("b", "").isOk());
  EXPECT_TRUE(store->check({"a", "b"}).valueOr(false));
  EXPECT_TRUE(store->check({}).valueOr(false));
  EXPECT_FALSE(store->check({"a", "zz"}).valueOr(true));
}

void checkWaitReleasedAndTimesOutNamingMissingKeys(StoreUnderTest& s) {
  auto waiter = s.connect();
  auto setter = s.connect();
  ASSERT_TRUE(setter->set("w1", "x").isOk());
  std::thread t([&] {
    std::this_thread::sleep_for(80ms);
    EXPECT_TRUE(setter->set("w2", "y").isOk());
  });
  Status st = waiter->wait({"w1", "w2"}, Deadline::after(10s));
  t.join();
  EXPECT_TRUE(st.isOk()) << st;
  auto start = std::chrono::steady_clock::now();
  st = waiter->wait({"w1", "missing-a", "missing-b"}, Deadline::after(120ms));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st;
  EXPECT_NE(st.message().find("missing-a"), std::string::npos) << st;
  EXPECT_NE(st.message().find("missing-b"), std::string::npos) << st;
  EXPECT_EQ(st.message().find("w1"), std::string::npos) << st;
  EXPECT_GE(took, 110ms);
  EXPECT_LT(took, 3s);
}

}  // namespace ddp::comm::conformance
