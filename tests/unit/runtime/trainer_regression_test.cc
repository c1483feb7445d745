// The trainer on a regression (spec.loss: mse) from a user's NPY files with float targets, over
// LocalBackend (ranks as threads). Oracle: the least-squares solution of the normal equations
// (in double) of the same samples, which a linear model trained to convergence reaches; two
// ranks match one rank on the same global batch. Targets that do not fit the loss are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/split_mix_rng.h"
#include "tests/support/local_backend.h"
#include "tests/support/temp_dir.h"
#include "tests/support/user_data_writers.h"
#include "worker/training/trainer.h"

namespace ddp::runtime {
namespace {

using Params = std::vector<std::vector<float>>;

Params train(int world, const TrainerConfig& config, double* testLoss = nullptr) {
  std::vector<Params> out(static_cast<size_t>(world));
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    auto trainer = Trainer::create(config, backend, {});
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
    if (rank == 0 && testLoss != nullptr) *testLoss = r->testLoss;
    for (Parameter* p : (*trainer)->model().parameters()) {
      const auto* d = static_cast<const float*>(p->data);
      out[static_cast<size_t>(rank)].emplace_back(d, d + p->numel());
    }
  });
  return out[0];
}

class TrainerRegressionTest : public ::testing::Test {
 protected:
  static constexpr int kSamples = 320, kTrain = 256, kFeatures = 3;

  void SetUp() override {
    SplitMixRng rng(21);
    for (int i = 0; i < kSamples; ++i) {
      float t = 0.25f;
      const float w[kFeatures] = {1.5f, -2.f, 0.5f};
      for (int j = 0; j < kFeatures; ++j) {
        x_.push_back(rng.normal());
        t += w[j] * x_.back();
      }
      y_.push_back(t + 0.1f * rng.normal());
    }
    test::writeNpy<float>(file("x.npy"), "<f4", {kSamples, kFeatures}, x_);
    test::writeNpy<float>(file("y.npy"), "<f4", {kSamples}, y_);
    std::vector<int32_t> classes(kSamples, 0);
    test::writeNpy<int32_t>(file("c.npy"), "<i4", {kSamples}, classes);
  }
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }

  TrainerConfig config(const std::string& targets = "y.npy") const {
    TrainerConfig c;
    c.job = "regression";
    c.seed = 3;
    c.model = ModelType::kSequential;
    c.stack = {{.kind = LayerKind::kLinear, .out = 1}};
    c.loss = LossType::kMse;
    c.data = DatasetKind::kNpy;
    c.userData.files.format = datafiles::UserDataFormat::kNpy;
    c.userData.files.train = {"", file("x.npy"), file(targets)};
    c.userData.valFraction = 0.2;  // the first 256 samples train, the last 64 evaluate
    c.batchSize = 128;  // 2 ranks: the whole training split each step (gradient descent)
    c.epochs = 200;
    c.shuffle = false;
    c.optimizer = optim::OptimizerConfig::sgd(0.1f, 0.f);
    c.logEverySteps = 100000;
    c.evalBatchSize = 64;
    return c;
  }

  // beta = (A^T A)^-1 A^T t over the training samples, A = [x, 1] (Gauss-Jordan; A^T A is SPD).
  std::vector<double> leastSquares() const {
    double m[4][5] = {};
    for (int i = 0; i < kTrain; ++i) {
      const double a[4] = {x_[3 * i], x_[3 * i + 1], x_[3 * i + 2], 1.0};
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) m[r][c] += a[r] * a[c];
        m[r][4] += a[r] * y_[i];
      }
    }
    for (int p = 0; p < 4; ++p) {
      for (int r = 0; r < 4; ++r) {
        if (r == p) continue;
        const double f = m[r][p] / m[p][p];
        for (int c = p; c < 5; ++c) m[r][c] -= f * m[p][c];
      }
    }
    return {m[0][4] / m[0][0], m[1][4] / m[1][1], m[2][4] / m[2][2], m[3][4] / m[3][3]};
  }

  test::TempDir dir_{"trainer_regression_test"};
  std::vector<float> x_, y_;
};

TEST_F(TrainerRegressionTest, ALinearModelReachesTheLeastSquaresSolution) {
  double testLoss = -1;
  const Params p = train(2, config(), &testLoss);
  ASSERT_EQ(p.size(), 2u);
  const std::vector<double> beta = leastSquares();
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(p[0][j], beta[j], 2e-4) << "weight " << j;
  EXPECT_NEAR(p[1][0], beta[3], 2e-4) << "bias";
  // The held-out mean squared error is the noise's variance (0.01), far below the targets' (about 6.5).
  EXPECT_GT(testLoss, 0.0);
  EXPECT_LT(testLoss, 0.02);
}

TEST_F(TrainerRegressionTest, TwoRanksMatchOneRankAndTheMlpTrainsToo) {
  TrainerConfig two = config();
  two.batchSize = 16;
  two.epochs = 2;
  two.nominalWorldSize = 0;
  TrainerConfig one = two;
  one.batchSize = 2 * two.batchSize;
  const Params a = train(2, two), b = train(1, one);
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  EXPECT_LT(worst, 2e-5f);
  TrainerConfig mlp = config();
  mlp.model = ModelType::kMlp;
  mlp.mlp.hidden = {8};  // inputs and the one output follow the data
  mlp.batchSize = 16;
  mlp.epochs = 10;
  double testLoss = -1;
  const Params m = train(1, mlp, &testLoss);
  EXPECT_EQ(m.back().size(), 1u) << "one output: the float target";
  EXPECT_LT(testLoss, 0.5);
}

TEST_F(TrainerRegressionTest, TargetsThatDoNotFitTheLossAreRefused) {
  const auto refused = [](const TrainerConfig& c, const std::string& words) {
    comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
      auto t = Trainer::create(c, backend, {});
      ASSERT_FALSE(t.isOk()) << words;
      EXPECT_NE(t.status().message().find(words), std::string::npos) << t.status();
    });
  };
  TrainerConfig ce = config();
  ce.loss = LossType::kCrossEntropy;
  refused(ce, "float targets (regression): train them with spec.loss: mse");
  refused(config("c.npy"), "spec.loss: mse needs float targets");
  TrainerConfig wide = config();
  wide.stack = {{.kind = LayerKind::kLinear, .out = 2}};
  refused(wide, "spec.model.stack: ends in [2] but mse needs [1]");
}

}  // namespace
}  // namespace ddp::runtime
