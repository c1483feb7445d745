#include "worker/optim/zero_partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace ddp::optim {
namespace {

TEST(ZeroPartitionTest, LargestFirstToLeastLoadedRank) {
  // Sorted: 9(p1) 7(p3) 5(p0) 3(p2) 1(p4); loads: r0 9 | r1 7 | r1 12 | r0 12 | r0 13
  auto owner = partitionParameters({5, 9, 3, 7, 1}, 2);
  EXPECT_EQ(owner, (std::vector<int>{1, 0, 0, 1, 0}));
  EXPECT_EQ(ownedBy(owner, 0), (std::vector<size_t>{1, 2, 4}));
  EXPECT_EQ(ownedBy(owner, 1), (std::vector<size_t>{0, 3}));
}

TEST(ZeroPartitionTest, TiesGoToTheEarlierParameterAndLowerRank) {
  EXPECT_EQ(partitionParameters({4, 4, 4, 4}, 3), (std::vector<int>{0, 1, 2, 0}));
  EXPECT_EQ(partitionParameters({}, 3), std::vector<int>{});
  EXPECT_EQ(partitionParameters({0, 0}, 1), (std::vector<int>{0, 0}));
}

TEST(ZeroPartitionTest, MaxLoadIsWithinOneParameterOfTheMean) {
  for (int world = 1; world <= 5; ++world) {
    std::vector<size_t> sizes;
    for (size_t i = 0; i < 37; ++i) sizes.push_back((i * 7919) % 101 + (i % 3 == 0 ? 500 : 0));
    auto owner = partitionParameters(sizes, world);
    std::vector<size_t> load(world, 0);
    for (size_t i = 0; i < sizes.size(); ++i) load[owner[i]] += sizes[i];
    const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
    const size_t biggest = *std::max_element(sizes.begin(), sizes.end());
    EXPECT_LE(*std::max_element(load.begin(), load.end()), total / world + biggest) << world;
  }
}

}  // namespace
}  // namespace ddp::optim
