// The trainer on a user's files (docs/DATA.md): an MLP on NPY and on CSV data (Gaussian clusters
// from makeSyntheticDataset, written out as files) learns the separable problem, two ranks
// match one rank on the same global batch, the CSV reader hands the trainer the very samples
// the NPY reader does (the same bits after training), and the standardization is saved in the
// checkpoint and adopted on resume (Note [Standardization]). Over LocalBackend (ranks as
// threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "tests/support/gpt_runs.h"
#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"
#include "worker/data/synthetic_dataset.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"
#include "worker/training/training_setup.h"

namespace ddp::runtime {
namespace {

using datafiles::UserDataFormat;

using test::maxAbsDiff;

// Every rank's run (test::trainRanks), each checked to have succeeded.
std::vector<test::RankRun> train(int world, const TrainerConfig& config, TrainerIo io = {}) {
  auto out = test::trainRanks(world, config, io);
  for (const auto& r : out) EXPECT_TRUE(r.status.isOk()) << r.status;
  return out;
}

class TrainerUserDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data::SyntheticConfig s;
    s.samples = 320;
    s.sampleShape = {12};
    s.classes = 4;
    s.separation = 5;
    s.seed = 11;
    auto d = data::makeSyntheticDataset(s);
    ASSERT_TRUE(d.isOk()) << d.status();
    clusters_ = std::move(*d);
    writeNpy(clusters_, "x.npy", "y.npy");
    writeCsv(clusters_, "data.csv");
  }
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }
  void writeNpy(const data::Dataset& d, const std::string& x, const std::string& y) const {
    test::writeNpy<float>(file(x), "<f4", {d.size(), 12}, d.images);
    std::vector<int64_t> labels(d.labels.begin(), d.labels.end());
    test::writeNpy<int64_t>(file(y), "<i8", {d.size()}, labels);
  }
  // Features as %.9g (a float's exact round trip), the label in the middle column.
  void writeCsv(const data::Dataset& d, const std::string& name) const {
    std::string text;
    for (int j = 0; j < 12; ++j) text += (j == 6 ? "class," : "") + std::string("f") + std::to_string(j) + (j < 11 ? "," : "\n");
    char buf[32];
    for (int64_t i = 0; i < d.size(); ++i) {
      for (int j = 0; j < 12; ++j) {
        if (j == 6) text += std::to_string(d.labels[i]) + ",";
        std::snprintf(buf, sizeof(buf), "%.9g", d.sample(i)[j]);
        text += buf + std::string(j < 11 ? "," : "\n");
      }
    }
    test::writeText(file(name), text);
  }
  TrainerConfig config(UserDataFormat format) const {
    TrainerConfig c;
    c.job = "user-data";
    c.seed = 5;
    c.model = ModelType::kMlp;
    c.mlp.hidden = {16};  // inputs and classes follow the data (fitModelToData)
    c.data = format == UserDataFormat::kNpy ? DatasetKind::kNpy : DatasetKind::kCsv;
    c.userData.files.format = format;
    if (format == UserDataFormat::kNpy) {
      c.userData.files.train = {"", file("x.npy"), file("y.npy")};
    } else {
      c.userData.files.train = {file("data.csv"), "", ""};
      c.userData.files.target = "class";
    }
    c.userData.valFraction = 0.2;  // 256 training samples, 64 held out
    c.batchSize = 16;
    c.epochs = 2;
    c.shuffle = false;
    c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f);
    c.logEverySteps = 1000;
    c.evalBatchSize = 64;
    return c;
  }

  test::TempDir dir_{"trainer_user_data_test"};
  data::Dataset clusters_;
};

TEST_F(TrainerUserDataTest, MlpOnNpyLearnsAndTwoRanksMatchOneRank) {
  const TrainerConfig c = config(UserDataFormat::kNpy);
  auto two = train(2, c);
  EXPECT_EQ(two[0].result.steps, 2 * 256 / (2 * 16));
  EXPECT_GT(two[0].result.testAccuracy, 0.9);
  EXPECT_EQ(maxAbsDiff(two[0].params, two[1].params), 0.f);
  EXPECT_EQ(two[0].params[0].size(), 12u * 16) << "the mlp's input follows the data's 12 features";
  EXPECT_EQ(two[0].params.back().size(), 4u) << "and its output the 4 classes";
  TrainerConfig one = c;
  one.batchSize = 2 * c.batchSize;
  auto single = train(1, one);
  EXPECT_EQ(single[0].result.steps, two[0].result.steps);
  EXPECT_LT(maxAbsDiff(two[0].params, single[0].params), 2e-5f);
}

TEST_F(TrainerUserDataTest, CsvGivesTheTrainerTheSameSamplesAsNpy) {
  auto npy = train(2, config(UserDataFormat::kNpy));
  auto csv = train(2, config(UserDataFormat::kCsv));
  EXPECT_GT(csv[0].result.testAccuracy, 0.9);
  EXPECT_EQ(maxAbsDiff(npy[0].params, csv[0].params), 0.f);
  EXPECT_EQ(npy[0].result.testAccuracy, csv[0].result.testAccuracy);
}

TEST_F(TrainerUserDataTest, StandardizationIsSavedAndAdoptedOnResume) {
  TrainerConfig c = config(UserDataFormat::kNpy);
  c.userData.standardizeAuto = true;
  auto reference = train(2, c);
  const data::Standardization computed = reference[0].data->standardization;
  ASSERT_EQ(computed.mean.size(), 12u);
  const TrainingFaults stop = TrainingFaults().stopDuring(7);
  TrainerIo io;
  io.faults = &stop;
  test::TempDir same("trainer_user_data_ckpt"), moved("trainer_user_data_ckpt");
  c.checkpointDir = same.path();
  ASSERT_TRUE(train(2, c, io)[0].result.stopped);
  auto resumed = train(2, c);  // the same files: the uninterrupted run's bits
  ASSERT_TRUE(resumed[0].result.resumed);
  EXPECT_EQ(maxAbsDiff(resumed[0].params, reference[0].params), 0.f);

  // The training files change under a checkpoint: the resumed run keeps the saved statistics.
  c.checkpointDir = moved.path();
  ASSERT_TRUE(train(2, c, io)[0].result.stopped);
  data::Dataset changed = clusters_;
  for (float& v : changed.images) v = v * 3 + 5;
  writeNpy(changed, "x.npy", "y.npy");
  auto adopted = train(2, c);
  ASSERT_TRUE(adopted[0].result.resumed);
  const TrainingData& d = *adopted[0].data;
  EXPECT_EQ(d.standardization, computed);
  EXPECT_NEAR(d.train.features()[0], (changed.images[0] - computed.mean[0]) / computed.std[0], 1e-4);
  EXPECT_NEAR(d.test.features()[5], (changed.images[256 * 12 + 5] - computed.mean[5]) / computed.std[5], 1e-4);
}

TEST_F(TrainerUserDataTest, ACnnRefusesSamplesThatAreNotImages) {
  TrainerConfig c = config(UserDataFormat::kNpy);
  c.model = ModelType::kCnn;
  const Status st = test::trainRanks(1, c)[0].status;
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("cnn takes 1x28x28 images, but the samples of " + file("y.npy") + " are 12"),
            std::string::npos)
      << st;
}

// A worker whose filesystem the controller did not see checks the files itself before the first
// step, with the controller's messages (Note [Data checks at submission]).
TEST_F(TrainerUserDataTest, TheWorkerChecksTheFilesBeforeTheFirstStep) {
  test::writeNpy<int64_t>(file("y5.npy"), "<i8", {5}, {0, 1, 0, 1, 0});
  test::writeNpy<float>(file("yf.npy"), "<f4", {320}, std::vector<float>(320, 0.5f));
  const struct {
    std::string targets, expect;
  } cases[] = {
      {"y5.npy", "spec.data.train.targets: " + file("y5.npy") + " has 5 targets but " + file("x.npy") + " has 320"},
      {"none.npy", "spec.data.train.targets: " + file("none.npy")},
      {"yf.npy", "holds float targets (regression)"},
  };
  for (const auto& c : cases) {
    TrainerConfig t = config(UserDataFormat::kNpy);
    t.userData.files.train.targets = file(c.targets);
    const Status st = test::trainRanks(1, t)[0].status;
    ASSERT_FALSE(st.isOk()) << c.targets;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st;
  }
}

// Regression (spec.loss mse) from a CSV target column read as floats: y = x . w + 1 with a
// little noise, also written as '<f8' NPY targets (trainer_regression_test covers NPY). The
// held-out error falls below a tenth of the targets' variance, and the CSV run is the NPY run,
// bit for bit.
TEST_F(TrainerUserDataTest, CsvRegressionTrainsLikeNpyRegression) {
  std::vector<double> y;
  std::string csv = "f0,f1,f2,f3,f4,f5,f6,f7,f8,f9,f10,f11,y\n";
  char buf[32];
  for (int64_t i = 0; i < clusters_.size(); ++i) {
    double v = 1.0 + 0.01 * static_cast<double>((i * 7) % 5 - 2);
    for (int j = 0; j < 12; ++j) {
      v += 0.1 * static_cast<double>(j % 3 - 1) * clusters_.sample(i)[j];
      std::snprintf(buf, sizeof(buf), "%.9g,", clusters_.sample(i)[j]);
      csv += buf;
    }
    y.push_back(static_cast<float>(v));  // exactly a float, so the CSV's %.9g reads back the same
    std::snprintf(buf, sizeof(buf), "%.9g\n", static_cast<float>(v));
    csv += buf;
  }
  test::writeNpy<double>(file("yv.npy"), "<f8", {clusters_.size()}, y);
  test::writeText(file("reg.csv"), csv);
  TrainerConfig c = config(UserDataFormat::kNpy);
  c.loss = LossType::kMse;
  c.userData.files.train.targets = file("yv.npy");
  c.userData.standardizeAuto = true;
  c.optimizer = optim::OptimizerConfig::adam(0.01f);
  c.epochs = 20;
  auto two = train(2, c);
  ASSERT_TRUE(two[0].status.isOk());
  EXPECT_EQ(two[0].params.back().size(), 1u) << "one output: the value";
  const auto& losses = two[0].result.stepLosses;
  ASSERT_GE(losses.size(), 4u);
  EXPECT_LT(losses.back(), losses.front() / 10) << losses.front() << " -> " << losses.back();
  double mean = 0, var = 0;  // of the held-out targets: predicting their mean scores var
  for (size_t i = 256; i < y.size(); ++i) mean += y[i] / 64;
  for (size_t i = 256; i < y.size(); ++i) var += (y[i] - mean) * (y[i] - mean) / 64;
  EXPECT_LT(two[0].result.testLoss, 0.1 * var) << "held-out mse " << two[0].result.testLoss << ", variance " << var;
  TrainerConfig fromCsv = c;
  fromCsv.data = DatasetKind::kCsv;
  fromCsv.userData.files.format = UserDataFormat::kCsv;
  fromCsv.userData.files.train = {file("reg.csv"), "", ""};
  fromCsv.userData.files.target = "y";
  fromCsv.userData.files.regression = true;
  auto csvRun = train(2, fromCsv);
  ASSERT_TRUE(csvRun[0].data->train.floatTargets);
  EXPECT_EQ(maxAbsDiff(csvRun[0].params, two[0].params), 0.f);
}

}  // namespace
}  // namespace ddp::runtime
