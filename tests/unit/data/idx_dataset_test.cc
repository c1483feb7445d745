// IDX directories (Note [IDX directories]): gzip and plain files written here, found by their
// MNIST-family names (EMNIST's prefix too), read back against the bytes written; truncated,
// mismatched and ambiguous directories refused naming the file.
#include "worker/data/idx_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"

namespace ddp::data {
namespace {

using datafiles::IdxSplit;

std::vector<uint8_t> pixels(int n, int rows, int cols) {
  std::vector<uint8_t> p;
  for (int i = 0; i < n * rows * cols; ++i) p.push_back(static_cast<uint8_t>((i * 37) % 256));
  return p;
}

void writeSplit(const std::string& dir, const std::string& stem, int n, bool gzip, int labelCount = -1) {
  const std::string gz = gzip ? ".gz" : "";
  test::writeIdx(dir + "/" + stem + "-images-idx3-ubyte" + gz, {static_cast<uint32_t>(n), 4, 3}, pixels(n, 4, 3), gzip);
  const int m = labelCount < 0 ? n : labelCount;
  std::vector<uint8_t> labels;
  for (int i = 0; i < m; ++i) labels.push_back(static_cast<uint8_t>(i % 5));
  test::writeIdx(dir + "/" + stem + "-labels-idx1-ubyte" + gz, {static_cast<uint32_t>(m)}, labels, gzip);
}

TEST(IdxDatasetTest, GzipAndPlainSplitsReadBackScaledToUnitRange) {
  test::TempDir dir("idx_dataset_test");
  writeSplit(dir.path(), "train", 6, true);
  writeSplit(dir.path(), "t10k", 2, false);
  auto train = loadIdxDataset(dir.path(), IdxSplit::kTrain);
  ASSERT_TRUE(train.isOk()) << train.status();
  EXPECT_EQ(train->sampleShape, (std::vector<int64_t>{1, 4, 3}));
  ASSERT_EQ(train->size(), 6);
  const std::vector<uint8_t> want = pixels(6, 4, 3);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(train->images[i], want[i] / 255.f) << i;
  EXPECT_EQ(train->labels, (std::vector<int32_t>{0, 1, 2, 3, 4, 0}));
  EXPECT_EQ(train->name, dir.path() + "/train-labels-idx1-ubyte.gz");
  auto eval = loadIdxDataset(dir.path(), IdxSplit::kEval);
  ASSERT_TRUE(eval.isOk()) << eval.status();
  EXPECT_EQ(eval->size(), 2);
}

TEST(IdxDatasetTest, EmnistNamesAndTestStems) {
  test::TempDir dir("idx_dataset_test");
  writeSplit(dir.path(), "emnist-balanced-train", 3, true);
  writeSplit(dir.path(), "emnist-balanced-test", 2, true);
  EXPECT_TRUE(loadIdxDataset(dir.path(), IdxSplit::kTrain).isOk());
  auto eval = loadIdxDataset(dir.path(), IdxSplit::kEval);
  ASSERT_TRUE(eval.isOk()) << eval.status();
  EXPECT_EQ(eval->size(), 2);
}

TEST(IdxDatasetTest, RefusalsNameTheFile) {
  test::TempDir dir("idx_dataset_test");
  const std::string d = dir.path();
  auto none = loadIdxDataset(d, IdxSplit::kTrain);
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("train-images-idx3-ubyte[.gz]"), std::string::npos) << none.status();

  writeSplit(d, "train", 4, true, 3);  // 4 images, 3 labels
  auto mismatch = loadIdxDataset(d, IdxSplit::kTrain);
  ASSERT_FALSE(mismatch.isOk());
  EXPECT_NE(mismatch.status().message().find("has 4 images but"), std::string::npos) << mismatch.status();

  writeSplit(d, "train", 4, false);  // now both train-images and train-images.gz exist
  auto twice = loadIdxDataset(d, IdxSplit::kTrain);
  ASSERT_FALSE(twice.isOk());
  EXPECT_NE(twice.status().message().find("two IDX files for one split"), std::string::npos) << twice.status();
  std::filesystem::remove(d + "/train-images-idx3-ubyte.gz");
  std::filesystem::remove(d + "/train-labels-idx1-ubyte.gz");
  ASSERT_TRUE(loadIdxDataset(d, IdxSplit::kTrain).isOk());

  std::filesystem::resize_file(d + "/train-images-idx3-ubyte", 16 + 20);  // 48 bytes announced
  auto cut = loadIdxDataset(d, IdxSplit::kTrain);
  ASSERT_FALSE(cut.isOk());
  EXPECT_NE(cut.status().message().find("train-images-idx3-ubyte: the header announces 48 bytes"), std::string::npos)
      << cut.status();
}

TEST(IdxDatasetTest, ATruncatedGzipFileIsFoundByItsTrailerAndATypeCodeRefused) {
  test::TempDir dir("idx_dataset_test");
  const std::string d = dir.path();
  writeSplit(d, "train", 50, true);
  // Images of 40 samples under a header announcing 50: the gzip trailer gives it away.
  test::writeIdx(d + "/train-images-idx3-ubyte.gz", {50, 4, 3}, pixels(40, 4, 3), true);
  auto h = datafiles::readIdxHeader(d + "/train-images-idx3-ubyte.gz", 3);
  ASSERT_FALSE(h.isOk());
  EXPECT_NE(h.status().message().find("gzip trailer says"), std::string::npos) << h.status();
  std::string bad = {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  test::writeText(d + "/float-labels", bad);
  auto code = datafiles::readIdxHeader(d + "/float-labels", 1);
  ASSERT_FALSE(code.isOk());
  EXPECT_NE(code.status().message().find("IDX type code 0x0d"), std::string::npos) << code.status();
}

}  // namespace
}  // namespace ddp::data
