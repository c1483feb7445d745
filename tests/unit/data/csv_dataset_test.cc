// Numeric CSV files: features in the file's column order, the target column named by
// spec.data.target, and every bad cell refused naming the file, the line and the column.
#include "worker/data/csv_dataset.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"

namespace ddp::data {
namespace {

TEST(CsvDatasetTest, ReadsFeaturesAroundTheTargetColumn) {
  test::TempDir dir("csv_dataset_test");
  const std::string path = dir.path() + "/iris.csv";
  test::writeText(path, "a, \"label\" ,b,c\r\n1.5,2,-3,4e1\r\n\n0,0, 7 ,0.25\n");
  auto d = loadCsvDataset(path, "label");
  ASSERT_TRUE(d.isOk()) << d.status();
  EXPECT_EQ(d->sampleShape, std::vector<int64_t>{3});
  EXPECT_EQ(d->images, (std::vector<float>{1.5f, -3, 40, 0, 7, 0.25f}));
  EXPECT_EQ(d->labels, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(d->name, path);
}

// Under spec.loss mse the target column holds float values.
TEST(CsvDatasetTest, FloatTargetsForRegression) {
  test::TempDir dir("csv_dataset_test");
  const std::string path = dir.path() + "/r.csv";
  test::writeText(path, "x,price\n1,2.5\n2,-0.125\n");
  auto d = loadCsvDataset(path, "price", true);
  ASSERT_TRUE(d.isOk()) << d.status();
  EXPECT_TRUE(d->floatTargets);
  EXPECT_EQ(d->values, (std::vector<float>{2.5f, -0.125f}));
  EXPECT_TRUE(d->labels.empty());
  EXPECT_EQ(d->size(), 2);
  auto classes = loadCsvDataset(path, "price");
  ASSERT_FALSE(classes.isOk());
  EXPECT_NE(classes.status().message().find(":2: column 2 (price): class label '2.5'"), std::string::npos)
      << classes.status();
}

TEST(CsvDatasetTest, EveryBadCellNamesTheFileLineAndColumn) {
  test::TempDir dir("csv_dataset_test");
  const struct {
    std::string text, expect;
  } cases[] = {
      {"x,y,label\n1,2,0\n3,abc,1\n", ":3: column 2 (y): 'abc' is not a number"},
      {"x,y,label\n1,,0\n", ":2: column 2 (y): empty cell"},
      {"x,y,label\n1,2,0\n1,2\n", ":3: 2 cells, the header has 3 columns"},
      {"x,y,label\n1,2,0.5\n", ":2: column 3 (label): class label '0.5' is not a whole number"},
      {"x,y,label\n1,2,-1\n", ":2: column 3 (label): class label '-1'"},
      {"x,y,label\n1,1e999,1\n", ":2: column 2 (y): '1e999' is not a finite float"},
      {"x,y,label\n1,nan,1\n", ":2: column 2 (y): 'nan' is not a finite float"},
      {"x,y,label\n", "no samples after the header"},
      {"x,y,lab\n1,2,3\n", "no column 'label' (spec.data.target) in the header; the columns are x, y, lab"},
      {"x,x,label\n1,2,3\n", ":1: column 2: column name 'x' appears twice"},
      {"", "empty file"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string path = dir.path() + "/case" + std::to_string(i++) + ".csv";
    test::writeText(path, c.text);
    auto d = loadCsvDataset(path, "label");
    ASSERT_FALSE(d.isOk()) << c.text;
    EXPECT_NE(d.status().message().find(path), std::string::npos) << d.status();
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status();
  }
  auto missing = loadCsvDataset(dir.path() + "/none.csv", "label");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ddp::data
