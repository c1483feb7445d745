// A user's dataset put together (Note [Class count], Note [Standardization]): the class count
// from the labels or the spec, a label outside it named with its file and index, the held-out
// split, and the standardization against closed forms.
#include "worker/data/user_data.h"

#include <gtest/gtest.h>

#include <cmath>

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
  EXPECT_EQ(u->val.images, (std::vector<float>{8, 9}));
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
  EXPECT_EQ(u->train.images, (std::vector<float>{-1, 0, 1, 0}));
  EXPECT_EQ(u->val.images, (std::vector<float>{3, 2})) << "the training split's statistics";
}

TEST_F(UserDataTest, GivenStatisticsBroadcastOrGoPerFeatureAndBadLengthsAreNamed) {
  test::writeNpy<float>(file("x.npy"), "<f4", {2, 2}, {1, 10, 3, 20});
  test::writeNpy<int32_t>(file("y.npy"), "<i4", {2}, {0, 1});
  UserDataConfig c = npy("x.npy", "y.npy");
  c.standardizeMean = {1};
  c.standardizeStd = {2};
  auto one = loadUserData(c);
  ASSERT_TRUE(one.isOk()) << one.status();
  EXPECT_EQ(one->train.images, (std::vector<float>{0, 4.5f, 1, 9.5f}));
  c.standardizeMean = {1, 10};
  c.standardizeStd = {2, 5};
  auto per = loadUserData(c);
  ASSERT_TRUE(per.isOk()) << per.status();
  EXPECT_EQ(per->train.images, (std::vector<float>{0, 0, 1, 2}));
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
