#include "common/binary_io.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

TEST(BinaryIoTest, RoundTripsValuesStringsVectors) {
  BinaryWriter w;
  w.put<uint32_t>(7);
  w.put<double>(-2.5);
  w.putString(std::string("a\0b", 3));
  w.putVector(std::vector<float>{1.f, 2.f, 3.f});
  std::string data = w.take();
  BinaryReader r(data);
  uint32_t u;
  double d;
  std::string s;
  std::vector<float> v;
  ASSERT_TRUE(r.get(&u).isOk());
  ASSERT_TRUE(r.get(&d).isOk());
  ASSERT_TRUE(r.getString(&s).isOk());
  ASSERT_TRUE(r.getVector(&v).isOk());
  EXPECT_EQ(u, 7u);
  EXPECT_EQ(d, -2.5);
  EXPECT_EQ(s, std::string("a\0b", 3));
  EXPECT_EQ(v, (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_TRUE(r.atEnd());
  EXPECT_EQ(r.get(&u).code(), StatusCode::kDataLoss);
}

TEST(BinaryIoTest, HugeVectorLengthIsRejectedNotAllocated) {
  BinaryWriter w;
  w.put<uint64_t>(uint64_t{1} << 60);
  std::string data = w.take();
  BinaryReader r(data, "state");
  std::vector<double> v;
  Status st = r.getVector(&v);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("state: truncated"), std::string::npos);
}

TEST(BinaryIoTest, FrameDetectsCorruptionTruncationAndVersion) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);  // the CRC-32 check value
  std::string frame = writeFramed(0xABCD, 2, "payload bytes");
  uint32_t version = 0;
  auto ok = readFramed(frame, 0xABCD, 2, &version, "thing");
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(*ok, "payload bytes");
  EXPECT_EQ(version, 2u);

  std::string flipped = frame;
  flipped.back() ^= 1;
  EXPECT_NE(readFramed(flipped, 0xABCD, 2, nullptr, "thing").status().message().find("checksum"),
            std::string::npos);
  EXPECT_EQ(readFramed(frame.substr(0, frame.size() - 1), 0xABCD, 2, nullptr, "thing").status().code(),
            StatusCode::kDataLoss);
  EXPECT_NE(readFramed(frame, 0xABCD, 1, nullptr, "thing").status().message().find("version 2"),
            std::string::npos);
  EXPECT_NE(readFramed(frame, 0x1111, 2, nullptr, "thing").status().message().find("magic"),
            std::string::npos);
}

}  // namespace
}  // namespace ddp
