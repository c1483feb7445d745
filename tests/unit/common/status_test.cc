#include "common/status.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/clock.h"
#include "common/dtype.h"

namespace ddp {
namespace {

Result<int> half(int x) {
  if (x % 2) return invalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status useHalf(int x, int* out) {
  DDP_ASSIGN_OR_RETURN(*out, half(x));
  DDP_RETURN_IF_ERROR(Status::ok());
  return Status::ok();
}

TEST(StatusTest, CarriesCodeMessageAndContext) {
  Status s = timeoutError("allreduce seq 3");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.withContext("rank 1").toString(), "Timeout: rank 1: allreduce seq 3");
  EXPECT_EQ(Status::ok().toString(), "OK");
}

TEST(StatusTest, ResultAndMacros) {
  int out = -1;
  EXPECT_TRUE(useHalf(8, &out).isOk());
  EXPECT_EQ(out, 4);
  Status bad = useHalf(7, &out);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "odd: 7");
  Result<int> fromOk{Status::ok()};
  EXPECT_EQ(fromOk.status().code(), StatusCode::kInternal);
}

TEST(ClockTest, FakeClockDrivesDeadlines) {
  FakeClock clock;
  Deadline d = Deadline::after(std::chrono::seconds(5), clock);
  EXPECT_FALSE(d.expired(clock));
  clock.advance(std::chrono::seconds(4));
  EXPECT_EQ(d.remaining(clock), std::chrono::seconds(1));
  clock.advance(std::chrono::seconds(2));
  EXPECT_TRUE(d.expired(clock));
  EXPECT_EQ(d.remaining(clock), Duration::zero());
}

TEST(DTypeTest, HalfAndBf16RoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f}) {
    EXPECT_EQ(halfToFloat(floatToHalf(f)), f) << f;
  }
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(1e6f))));
  for (float f : {0.0f, 1.0f, -3.0f, 1.5f, 256.0f}) EXPECT_EQ(bf16ToFloat(floatToBf16(f)), f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.00390625f)), 1.0f);  // 1 + 2^-8 ties to even
  EXPECT_EQ(dtypeSize(DType::kBF16), 2u);
  DType d;
  EXPECT_TRUE(parseDType("bf16", &d));
  EXPECT_EQ(d, DType::kBF16);
  EXPECT_FALSE(parseDType("f8", &d));
}

}  // namespace
}  // namespace ddp
