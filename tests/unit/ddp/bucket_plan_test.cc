// BucketPlan is pure: checked against hand-computed assignments (Note [Bucket assignment]).
#include "worker/ddp/bucket_plan.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

std::vector<ParamLayout> f32Params(std::vector<size_t> numels) {
  std::vector<ParamLayout> out;
  for (size_t n : numels) out.push_back({n, DType::kF32, Device::cpu()});
  return out;
}

std::vector<std::vector<size_t>> members(const BucketPlan& plan) {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : plan.buckets()) out.push_back(b.params);
  return out;
}

TEST(BucketPlanTest, DefaultCapsReverseOrderSmallFirstBucket) {
  // 4 params of 512 KiB each (f32, 131072 elements): reverse order 3,2,... The first bucket
  // closes at 1 MiB (params 3 and 2); the rest fit under 25 MiB.
  auto params = f32Params({131072, 131072, 131072, 131072});
  auto plan = BucketPlan::compute(params, BucketPlan::reverseOrder(4), {});
  ASSERT_TRUE(plan.isOk()) << plan.status();
  EXPECT_EQ(members(*plan), (std::vector<std::vector<size_t>>{{3, 2}, {1, 0}}));
  EXPECT_EQ(plan->buckets()[0].offsets, (std::vector<size_t>{0, 131072}));
  EXPECT_EQ(plan->buckets()[1].numel, 262144u);
  EXPECT_EQ(plan->bucketOf(0), 1u);
  EXPECT_EQ(plan->positionOf(0), 1u);
  EXPECT_EQ(plan->flatOrder(), (std::vector<size_t>{3, 2, 1, 0}));
}

TEST(BucketPlanTest, ClosesWhenReachingCapAndOversizedParamsStandAlone) {
  // Caps in bytes: first 8, then 16. Sizes in f32 elements: 1, 1, 10 (40 B > cap), 2, 2, 2, 2.
  auto params = f32Params({1, 1, 10, 2, 2, 2, 2});
  std::vector<size_t> order = {0, 1, 2, 3, 4, 5, 6};
  auto plan = BucketPlan::compute(params, order, {16, 8});
  ASSERT_TRUE(plan.isOk());
  // {0,1} reaches 8 B -> closed; {2} is 40 B alone; {3,4} = 16 B; {5,6} = 16 B.
  EXPECT_EQ(members(*plan), (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3, 4}, {5, 6}}));
}

TEST(BucketPlanTest, KeyedByDtypeAndDevice) {
  std::vector<ParamLayout> params = {{4, DType::kF32, Device::cpu()},
                                     {4, DType::kF64, Device::cpu()},
                                     {4, DType::kF32, Device::cuda(0)},
                                     {4, DType::kF32, Device::cpu()},
                                     {4, DType::kF64, Device::cpu()}};
  auto plan = BucketPlan::compute(params, {0, 1, 2, 3, 4}, {1 << 20, 1 << 20});
  ASSERT_TRUE(plan.isOk());
  // One open bucket per key; numbered by their first parameter's position.
  EXPECT_EQ(members(*plan), (std::vector<std::vector<size_t>>{{0, 3}, {1, 4}, {2}}));
  EXPECT_EQ(plan->buckets()[1].dtype, DType::kF64);
  EXPECT_EQ(plan->buckets()[2].device, Device::cuda(0));
}

TEST(BucketPlanTest, FirstCapIsPerKey) {
  // Each key gets its own small first bucket.
  std::vector<ParamLayout> params = {{2, DType::kF32, Device::cpu()}, {1, DType::kF64, Device::cpu()},
                                     {2, DType::kF32, Device::cpu()}, {1, DType::kF64, Device::cpu()},
                                     {2, DType::kF32, Device::cpu()}};
  auto plan = BucketPlan::compute(params, {0, 1, 2, 3, 4}, {1024, 8});
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(members(*plan), (std::vector<std::vector<size_t>>{{0}, {1}, {2, 4}, {3}}));
}

TEST(BucketPlanTest, EmptyAndZeroSizedParameters) {
  auto empty = BucketPlan::compute({}, {}, {});
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(empty->numBuckets(), 0u);
  auto zeros = BucketPlan::compute(f32Params({0, 0}), {1, 0}, {});
  ASSERT_TRUE(zeros.isOk());
  EXPECT_EQ(members(*zeros), (std::vector<std::vector<size_t>>{{1, 0}}));
}

TEST(BucketPlanTest, RejectsBadOrdersAndOptions) {
  auto params = f32Params({1, 2, 3});
  EXPECT_EQ(BucketPlan::compute(params, {0, 1}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BucketPlan::compute(params, {0, 1, 1}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BucketPlan::compute(params, {0, 1, 5}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BucketPlan::compute(params, {0, 1, 2}, {0, 1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(BucketPlanTest, SameInputsSamePlan) {
  auto params = f32Params({5, 700000, 3, 9, 1});
  auto a = BucketPlan::compute(params, {4, 2, 0, 1, 3}, {});
  auto b = BucketPlan::compute(params, {4, 2, 0, 1, 3}, {});
  auto c = BucketPlan::compute(params, BucketPlan::reverseOrder(5), {});
  ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
  EXPECT_EQ(*a, *b);
  EXPECT_FALSE(*a == *c);
}

}  // namespace
}  // namespace ddp
