// A user's dataset put together (Note [Class count], Note [Standardization]): the class count
// from the labels or the spec, a label outside it named with its file and index, the held-out
// split, and the standardization against closed forms.
#include "worker/data/user_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"

namespace ddp::data {
namespace {

using datafiles::UserDataFormat;

class UserDataTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }
  UserDataConfig npy(const std::string& x, const std::string& y) const {
    UserDataConfig c;
    c.files.format = UserDataFormat::kNpy;
    c.files.train = {"", file(x), file(y)};
    c.valFraction = 0;
    return c;
  }
  test::TempDir dir_{"user_data_test"};
};

TEST_F(UserDataTest, ClassesFromTheLabelsOrTheSpecAndALabelOutsideNamed) {
  test::writeNpy<float>(file("x.npy"), "<f4", {4, 1}, {1, 2, 3, 4});
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {4}, {0, 3, 1, 3});
  test::writeNpy<float>(file("vx.npy"), "<f4", {2, 1}, {1, 2});
  test::writeNpy<int32_t>(file("vy.npy"), "<i4", {2}, {0, 4});
  UserDataConfig c = npy("x.npy", "y.npy");
  auto u = loadUserData(c);
  ASSERT_TRUE(u.isOk()) << u.status();
  EXPECT_EQ(u->train.classes, 4);
  c.classes = 3;
  auto over = loadUserData(c);
  ASSERT_FALSE(over.isOk());
  EXPECT_NE(over.status().message().find(file("y.npy") + ": label 3 at index 1 is >= spec.data.classes (3)"),
            std::string::npos)
      << over.status();
  c.classes = 0;
  c.files.val = {"", file("vx.npy"), file("vy.npy")};
  auto val = loadUserData(c);
  ASSERT_FALSE(val.isOk());
  EXPECT_NE(val.status().message().find(file("vy.npy") + ": label 4 at index 1 is outside the training labels' classes [0, 4)"),
            std::string::npos)
      << val.status();
}

TEST_F(UserDataTest, ValFractionHoldsOutTheLastSamples) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int i = 0; i < 10; ++i) {
    x.push_back(static_cast<float>(i));
    y.push_back(i % 2);
  }
  test::writeNpy<float>(file("x.npy"), "<f4", {10, 1}, x);
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {10}, y);
  UserDataConfig c = npy("x.npy", "y.npy");
  c.valFraction = 0.25;  // floor(2.5) = 2 held out
  auto u = loadUserData(c);
  ASSERT_TRUE(u.isOk()) << u.status();
  EXPECT_EQ(u->train.size(), 8);
  EXPECT_EQ(u->val.features(), (std::vector<float>{8, 9}));
  EXPECT_EQ(u->val.labels, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(u->val.classes, 2);
}

// Per feature for npy: feature 0 is {1, 3} (mean 2, std 1), feature 1 is {10, 10} (std 0 -> 1).
TEST_F(UserDataTest, AutoStandardizationPerFeatureMatchesTheClosedForm) {
  test::writeNpy<float>(file("x.npy"), "<f4", {2, 2}, {1, 10, 3, 10});
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {2}, {0, 1});
  test::writeNpy<float>(file("vx.npy"), "<f4", {1, 2}, {5, 12});
  test::writeNpy<int32_t>(file("vy.npy"), "<i4", {1}, {1});
  UserDataConfig c = npy("x.npy", "y.npy");
  c.files.val = {"", file("vx.npy"), file("vy.npy")};
  c.standardizeAuto = true;
  auto u = loadUserData(c);
  ASSERT_TRUE(u.isOk()) << u.status();
  EXPECT_EQ(u->standardization.mean, (std::vector<float>{2, 10}));
  EXPECT_EQ(u->standardization.std, (std::vector<float>{1, 1}));
  EXPECT_EQ(u->train.features(), (std::vector<float>{-1, 0, 1, 0}));
  EXPECT_EQ(u->val.features(), (std::vector<float>{3, 2})) << "the training split's statistics";
}

TEST_F(UserDataTest, GivenStatisticsBroadcastOrGoPerFeatureAndBadLengthsAreNamed) {
  test::writeNpy<float>(file("x.npy"), "<f4", {2, 2}, {1, 10, 3, 20});
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {2}, {0, 1});
  UserDataConfig c = npy("x.npy", "y.npy");
  c.standardizeMean = {1};
  c.standardizeStd = {2};
  auto one = loadUserData(c);
  ASSERT_TRUE(one.isOk()) << one.status();
  EXPECT_EQ(one->train.features(), (std::vector<float>{0, 4.5f, 1, 9.5f}));
  c.standardizeMean = {1, 10};
  c.standardizeStd = {2, 5};
  auto per = loadUserData(c);
  ASSERT_TRUE(per.isOk()) << per.status();
  EXPECT_EQ(per->train.features(), (std::vector<float>{0, 0, 1, 2}));
  c.standardizeMean = {1, 2, 3};
  c.standardizeStd = {1, 1, 1};
  auto bad = loadUserData(c);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("spec.data.standardize.mean: 3 values, but the data has 2 features"),
            std::string::npos)
      << bad.status();
}

// IDX images: one mean and std over every pixel.
TEST_F(UserDataTest, IdxImagesGetOneMeanAndStdOverEveryPixel) {
  test::writeIdx(file("train-images-idx3-ubyte"), {2, 1, 2}, {0, 255, 255, 255}, false);
  test::writeIdx(file("train-labels-idx1-ubyte"), {2}, {0, 1}, false);
  UserDataConfig c;
  c.files.format = UserDataFormat::kIdx;
  c.files.train.path = dir_.path();
  c.valFraction = 0;
  c.standardizeAuto = true;
  auto u = loadUserData(c);
  ASSERT_TRUE(u.isOk()) << u.status();
  ASSERT_EQ(u->standardization.mean.size(), 1u);
  EXPECT_FLOAT_EQ(u->standardization.mean[0], 0.75f);
  EXPECT_FLOAT_EQ(u->standardization.std[0], std::sqrt(0.75f * 0.25f));
  EXPECT_EQ(u->train.sampleShape, (std::vector<int64_t>{1, 1, 2}));
}

// Note [Mapped features]: the NPY features stay in the mapped file, narrowed by valFraction and
// limit and standardized as they are copied; the same numbers through the CSV reader (an
// in-memory matrix standardized in place) give the same bits.
TEST_F(UserDataTest, MappedNpyFeaturesMatchTheInMemoryCsvBitForBit) {
  std::vector<float> x;
  std::vector<int32_t> y;
  std::string csv = "a,b,c,label\n";
  for (int i = 0; i < 20; ++i) {
    const float row[3] = {0.1f * static_cast<float>(i * i), -0.37f * static_cast<float>(i), 7.5f};
    x.insert(x.end(), row, row + 3);
    y.push_back(i % 3);
    char line[128];
    std::snprintf(line, sizeof(line), "%.9g,%.9g,%.9g,%d\n", row[0], row[1], row[2], i % 3);
    csv += line;
  }
  test::writeNpy<float>(file("x.npy"), "<f4", {20, 3}, x);
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {20}, y);
  test::writeText(file("d.csv"), csv);
  UserDataConfig n = npy("x.npy", "y.npy");
  n.valFraction = 0.25;
  n.trainLimit = 12;
  n.standardizeAuto = true;
  UserDataConfig c = n;
  c.files.format = UserDataFormat::kCsv;
  c.files.train = {file("d.csv"), "", ""};
  c.files.target = "label";
  auto mapped = loadUserData(n);
  auto memory = loadUserData(c);
  ASSERT_TRUE(mapped.isOk()) << mapped.status();
  ASSERT_TRUE(memory.isOk()) << memory.status();
  ASSERT_FALSE(mapped->train.inMemory());
  ASSERT_TRUE(memory->train.inMemory());
  EXPECT_TRUE(mapped->train.images.empty()) << "nothing copied to the heap";
  EXPECT_EQ(mapped->train.size(), 12);
  EXPECT_EQ(mapped->val.size(), 5);
  EXPECT_EQ(mapped->standardization, memory->standardization);
  EXPECT_EQ(mapped->train.features(), memory->train.features());
  EXPECT_EQ(mapped->val.features(), memory->val.features());
  EXPECT_EQ(mapped->val.labels, memory->val.labels);
  std::vector<float> one(3);
  mapped->val.copySamples(4, 1, one.data());  // the last row of the file, standardized
  const auto& s = mapped->standardization;
  for (int j = 0; j < 3; ++j) EXPECT_EQ(one[j], (x[19 * 3 + j] - s.mean[j]) * (1.f / s.std[j])) << j;
}

TEST(StandardizationTest, EncodeDecodeAndRestandardize) {
  Standardization a{{1, 2}, {2, 4}};
  auto back = Standardization::decode(a.encode());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(*back, a);
  EXPECT_FALSE(Standardization::decode("junk").isOk());
  Dataset d;
  d.sampleShape = {2};
  d.labels = {0};
  d.images = {5, 10};
  applyStandardization(a, &d);
  EXPECT_EQ(d.images, (std::vector<float>{2, 2}));
  Standardization b{{5}, {1}};
  restandardize(a, b, &d);
  EXPECT_EQ(d.images, (std::vector<float>{0, 5}));
  EXPECT_FALSE(checkStandardization(Standardization{{0}, {0}}, 2).isOk());
}

}  // namespace
}  // namespace ddp::data
