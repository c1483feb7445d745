#include "common/store/prefix_store.h"

#include <gtest/gtest.h>

#include "tests/support/store_conformance.h"
#include "common/store/in_memory_store.h"

namespace ddp::comm {
namespace {

// The shared conformance checks, once for the in-memory store (the reference) and once through
// a prefix store (nested twice, to cover prefixes of prefixes).
DDP_STORE_CONFORMANCE_TESTS(InMemoryStoreConformance,
                            [] { return conformance::sharedStore(std::make_shared<InMemoryStore>()); })

DDP_STORE_CONFORMANCE_TESTS(PrefixStoreConformance, [] {
  auto base = std::make_shared<InMemoryStore>();
  auto inner = std::make_shared<PrefixStore>("job/gen3/", base);
  return conformance::sharedStore(std::make_shared<PrefixStore>("nccl/", inner));
})

TEST(PrefixStoreTest, KeysLandUnderThePrefix) {
  InMemoryStore base;
  PrefixStore gen3(PrefixStore::jobGenerationPrefix("fmnist", 3), base);
  PrefixStore gen4(PrefixStore::jobGenerationPrefix("fmnist", 4), base);
  EXPECT_EQ(gen3.prefix(), "fmnist/gen3/");
  ASSERT_TRUE(gen3.set("rank0", "a").isOk());
  EXPECT_EQ(base.get("fmnist/gen3/rank0", Deadline::after(1s)).valueOr("?"), "a");
  // Generations do not see each other's keys.
  EXPECT_FALSE(gen4.check({"rank0"}).valueOr(true));
  EXPECT_EQ(*gen4.add("count", 2), 2);
  EXPECT_EQ(*gen3.add("count", 5), 5);
  EXPECT_EQ(base.get("fmnist/gen4/count", Deadline::after(1s)).valueOr("?"), "2");
  EXPECT_TRUE(*gen3.deleteKey("rank0"));
  EXPECT_EQ(base.numKeys(), 2u);
}

TEST(PrefixStoreTest, ErrorsNameTheFullKeyAndTimeoutIsInherited) {
  InMemoryStore base;
  base.setTimeout(7s);
  PrefixStore p("job/gen1/", base);
  EXPECT_EQ(p.timeout(), 7s);
  auto got = p.get("nccl_id", Deadline::after(10ms));
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout);
  EXPECT_NE(got.status().message().find("job/gen1/nccl_id"), std::string::npos) << got.status();
  Status w = p.wait({"a", "b"}, Deadline::after(10ms));
  EXPECT_NE(w.message().find("job/gen1/b"), std::string::npos) << w;
}

}  // namespace
}  // namespace ddp::comm
