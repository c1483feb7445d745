// NPY features and targets (Note [NPY files]): every supported dtype read back against the
// values written, by the format's definition (tests/support/user_data_writers.h) and by
// numpy.save itself (the independent writer; skipped where python3-numpy is absent), and every
// refusal naming the file.
#include "worker/data/npy_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "common/datafiles/npy_file.h"
#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"

namespace ddp::data {
namespace {

using test::writeNpy;

class NpyDatasetTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }
  test::TempDir dir_{"npy_dataset_test"};
};

TEST_F(NpyDatasetTest, EachFeatureDTypeReadsAsFloat) {
  writeNpy<int32_t>(file("y.npy"), "<i4", {3}, {2, 0, 1});
  writeNpy<float>(file("f4.npy"), "<f4", {3, 2}, {0.5f, -1.25f, 2, 3, 4, 5});
  writeNpy<double>(file("f8.npy"), "<f8", {3, 2}, {0.5, -1.25, 2, 3, 4, 5});
  writeNpy<uint8_t>(file("u1.npy"), "|u1", {3, 2}, {1, 255, 2, 3, 4, 5});
  for (const char* name : {"f4.npy", "f8.npy"}) {
    auto d = loadNpyDataset(file(name), file("y.npy"));
    ASSERT_TRUE(d.isOk()) << d.status();
    EXPECT_EQ(d->sampleShape, std::vector<int64_t>{2});
    EXPECT_EQ(d->features(), (std::vector<float>{0.5f, -1.25f, 2, 3, 4, 5})) << name;
    EXPECT_EQ(d->labels, (std::vector<int32_t>{2, 0, 1}));
    EXPECT_FALSE(d->floatTargets);
    EXPECT_EQ(d->name, file("y.npy"));
  }
  auto u = loadNpyDataset(file("u1.npy"), file("y.npy"));
  ASSERT_TRUE(u.isOk()) << u.status();
  EXPECT_EQ(u->features(), (std::vector<float>{1, 255, 2, 3, 4, 5})) << "bytes are not rescaled";
}

TEST_F(NpyDatasetTest, TargetDTypesAndTheTrailingShape) {
  writeNpy<float>(file("x.npy"), "<f4", {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  writeNpy<int64_t>(file("i8.npy"), "<i8", {2, 1}, {7, 3});
  writeNpy<float>(file("vf4.npy"), "<f4", {2}, {0.25f, -3});
  writeNpy<double>(file("vf8.npy"), "<f8", {2}, {0.25, -3});
  auto c = loadNpyDataset(file("x.npy"), file("i8.npy"));
  ASSERT_TRUE(c.isOk()) << c.status();
  EXPECT_EQ(c->sampleShape, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(c->labels, (std::vector<int32_t>{7, 3}));
  for (const char* name : {"vf4.npy", "vf8.npy"}) {
    auto v = loadNpyDataset(file("x.npy"), file(name));
    ASSERT_TRUE(v.isOk()) << v.status();
    EXPECT_TRUE(v->floatTargets);
    EXPECT_EQ(v->values, (std::vector<float>{0.25f, -3}));
    EXPECT_EQ(v->size(), 2);
  }
}

TEST_F(NpyDatasetTest, RefusalsNameTheFileAndWhatIsWrong) {
  writeNpy<int32_t>(file("y.npy"), "<i4", {2}, {0, 1});
  writeNpy<int32_t>(file("y3.npy"), "<i4", {3}, {0, 1, 1});
  writeNpy<int32_t>(file("neg.npy"), "<i4", {2}, {0, -4});
  writeNpy<float>(file("x.npy"), "<f4", {2, 2}, {1, 2, 3, 4});
  test::writeNpyBytes(file("fortran.npy"), "<f4", {2, 2}, std::string(16, '\0'), true);
  test::writeNpyBytes(file("big.npy"), ">f4", {2, 2}, std::string(16, '\0'));
  test::writeNpyBytes(file("cut.npy"), "<f4", {2, 2}, std::string(12, '\0'));
  test::writeNpyBytes(file("str.npy"), "<U3", {2}, std::string(24, '\0'));
  test::writeText(file("text.npy"), "not numpy");
  writeNpy<float>(file("nan.npy"), "<f4", {2, 2}, {1, 2, NAN, 4});
  writeNpy<int32_t>(file("xi.npy"), "<i4", {2, 2}, {1, 2, 3, 4});
  const struct {
    std::string features, targets, expect;
  } cases[] = {
      {"fortran.npy", "y.npy", "fortran_order is True"},
      {"big.npy", "y.npy", "dtype '>f4'"},
      {"cut.npy", "y.npy", "(truncated)"},
      {"str.npy", "y.npy", "dtype '<U3'"},
      {"text.npy", "y.npy", "NPY magic"},
      {"missing.npy", "y.npy", "missing.npy"},
      {"x.npy", "y3.npy", "has 3 targets but"},
      {"x.npy", "neg.npy", "class label -4 at index 1"},
      {"nan.npy", "y.npy", "feature 0 of sample 1 is not a finite float"},
      {"xi.npy", "y.npy", "features are '<f4', '<f8' or '|u1'"},
  };
  for (const auto& c : cases) {
    auto d = loadNpyDataset(file(c.features), file(c.targets));
    ASSERT_FALSE(d.isOk()) << c.features;
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos) << d.status();
    EXPECT_TRUE(d.status().message().find(c.features) != std::string::npos ||
                d.status().message().find(c.targets) != std::string::npos)
        << d.status();
  }
}

TEST_F(NpyDatasetTest, HeaderVersionTwoAndAnEmptyShape) {
  auto h = datafiles::parseNpyHeaderText("a.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 12);
  ASSERT_TRUE(h.isOk()) << h.status();
  EXPECT_TRUE(h->shape.empty());
  EXPECT_EQ(h->count(), 1);
  auto w = datafiles::parseNpyHeaderText("a.npy", "{'shape': (4, 5), 'fortran_order': False, 'descr': '|u1'}", 12);
  ASSERT_TRUE(w.isOk()) << w.status();
  EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(w->dtype, datafiles::NpyDType::kU8);
}

// The independent writer: numpy.save, for every supported dtype, read back by our reader.
TEST_F(NpyDatasetTest, ReadsWhatNumpySaveWrites) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-numpy is not installed (scripts/setup.sh installs it)";
  }
  const std::string script = file("save.py");
  test::writeText(script,
                  "import numpy as np, sys\n"
                  "d = sys.argv[1]\n"
                  "x = np.arange(24).reshape(4, 2, 3) * 0.5 - 3\n"
                  "np.save(d + '/f4.npy', x.astype('<f4'))\n"
                  "np.save(d + '/f8.npy', x.astype('<f8'))\n"
                  "np.save(d + '/u1.npy', np.arange(24, dtype='|u1').reshape(4, 2, 3))\n"
                  "np.save(d + '/i4.npy', np.array([3, 1, 0, 2], dtype='<i4'))\n"
                  "np.save(d + '/i8.npy', np.array([3, 1, 0, 2], dtype='<i8'))\n"
                  "np.save(d + '/v8.npy', np.array([0.5, -1.5, 2.25, 1e-3]))\n"
                  "np.save(d + '/fortran.npy', np.asfortranarray(x))\n");
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + dir_.path()).c_str()), 0);
  std::vector<float> expect;
  for (int i = 0; i < 24; ++i) expect.push_back(static_cast<float>(i * 0.5 - 3));
  for (const char* f : {"f4.npy", "f8.npy"}) {
    for (const char* t : {"i4.npy", "i8.npy"}) {
      auto d = loadNpyDataset(file(f), file(t));
      ASSERT_TRUE(d.isOk()) << d.status();
      EXPECT_EQ(d->sampleShape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(d->features(), expect) << f;
      EXPECT_EQ(d->labels, (std::vector<int32_t>{3, 1, 0, 2})) << t;
    }
  }
  auto u = loadNpyDataset(file("u1.npy"), file("v8.npy"));
  ASSERT_TRUE(u.isOk()) << u.status();
  EXPECT_EQ(u->features()[23], 23.f);
  EXPECT_EQ(u->values, (std::vector<float>{0.5f, -1.5f, 2.25f, 1e-3f}));
  auto fortran = loadNpyDataset(file("fortran.npy"), file("i4.npy"));
  ASSERT_FALSE(fortran.isOk());
  EXPECT_NE(fortran.status().message().find("fortran_order is True"), std::string::npos) << fortran.status();
}

}  // namespace
}  // namespace ddp::data
