// Fashion-MNIST reader: counts, label range and the first image against an independent zlib
// read (skipped when the dataset-fashion-mnist package is not installed); clear errors for
// missing, corrupt and truncated files (written to a temporary directory).
#include "worker/data/fashion_mnist.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ddp::data {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

void writeGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

TEST(FashionMnistTest, MissingFilesNameThePackage) {
  TempDir dir;
  auto r = loadFashionMnist(Split::kTrain, {.dir = dir.path()});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("apt-get install dataset-fashion-mnist"), std::string::npos)
      << r.status();
  EXPECT_FALSE(fashionMnistAvailable(dir.path()));
}

TEST(FashionMnistTest, CorruptAndTruncatedFilesAreDataLoss) {
  TempDir dir;
  const std::string images = dir.path() + "/t10k-images-idx3-ubyte.gz";
  const std::string labels = dir.path() + "/t10k-labels-idx1-ubyte.gz";
  // Bad magic.
  writeGz(images, be32(0x0803 + 1) + be32(1) + be32(2) + be32(2) + std::string(4, '\1'));
  auto r = readIdxImages(images);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("bad magic"), std::string::npos) << r.status();
  // Truncated: header promises 3 images of 2x2, data holds 5 bytes.
  writeGz(images, be32(0x0803) + be32(3) + be32(2) + be32(2) + std::string(5, '\1'));
  r = readIdxImages(images);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status();
  // Valid images, labels out of range.
  writeGz(images, be32(0x0803) + be32(2) + be32(2) + be32(2) + std::string(8, '\x7f'));
  writeGz(labels, be32(0x0801) + be32(2) + std::string("\x01\x0b", 2));
  auto d = loadFashionMnist(Split::kTest, {.dir = dir.path()});
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("label 11"), std::string::npos) << d.status();
  // Count mismatch between the two files.
  writeGz(labels, be32(0x0801) + be32(1) + std::string("\x01", 1));
  d = loadFashionMnist(Split::kTest, {.dir = dir.path()});
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
  // A file that is not gzip at all but garbage of the right length: bad magic.
  { std::ofstream(images) << "garbage that is not an IDX file"; }
  EXPECT_EQ(readIdxImages(images).status().code(), StatusCode::kDataLoss);
  // Well-formed tiny files load, scaled to [0, 1] without normalisation.
  writeGz(images, be32(0x0803) + be32(1) + be32(2) + be32(2) + std::string("\x00\xff\x33\x66", 4));
  d = loadFashionMnist(Split::kTest, {.dir = dir.path(), .normalize = false});
  ASSERT_TRUE(d.isOk()) << d.status();
  EXPECT_EQ(d->images, (std::vector<float>{0.f, 1.f, 0x33 / 255.f, 0x66 / 255.f}));
  EXPECT_EQ(d->sampleShape, (std::vector<int64_t>{1, 2, 2}));
}

TEST(FashionMnistTest, RealFilesCountsLabelsAndFirstImage) {
  if (!fashionMnistAvailable()) GTEST_SKIP() << "package dataset-fashion-mnist not installed";
  auto test = loadFashionMnist(Split::kTest, {.normalize = false});
  ASSERT_TRUE(test.isOk()) << test.status();
  EXPECT_EQ(test->size(), 10000);
  auto train = loadFashionMnist(Split::kTrain, {.normalize = false});
  ASSERT_TRUE(train.isOk()) << train.status();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(train->images.size(), 60000u * 784u);
  std::vector<int> trainPerClass(10, 0);
  for (int32_t l : train->labels) trainPerClass.at(l)++;
  for (int c = 0; c < 10; ++c) EXPECT_EQ(trainPerClass[c], 6000) << "class " << c;
  auto head = loadFashionMnist(Split::kTrain, {.normalize = false, .limit = 100});
  ASSERT_TRUE(head.isOk());
  EXPECT_EQ(head->size(), 100);
  EXPECT_EQ(head->labels, std::vector<int32_t>(train->labels.begin(), train->labels.begin() + 100));
  std::vector<int> perClass(10, 0);
  for (int32_t l : test->labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    perClass[l]++;
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(perClass[c], 1000) << "class " << c;  // balanced split
  // Independent read of the first test image with zlib: skip the 16-byte header.
  gzFile f = gzopen((std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  unsigned char buf[16 + 784];
  ASSERT_EQ(gzread(f, buf, sizeof(buf)), static_cast<int>(sizeof(buf)));
  gzclose(f);
  uint64_t want = 0, got = 0;
  for (int i = 0; i < 784; ++i) {
    want = want * 31 + buf[16 + i];
    got = got * 31 + static_cast<uint64_t>(std::lround(test->images[i] * 255.f));
  }
  EXPECT_EQ(got, want);
  // Normalised load: (x - mean) / std.
  auto norm = loadFashionMnist(Split::kTest, {.limit = 1});
  ASSERT_TRUE(norm.isOk());
  EXPECT_NEAR(norm->images[100], (test->images[100] - kFashionMnistMean) / kFashionMnistStd, 1e-5);
}

}  // namespace
}  // namespace ddp::data
