// Note [Data checks at submission]: a gpt job's token or text files are checked when the job is
// submitted to a controller whose workers share its filesystem. Real files in a temp dir, written
// with the project's writer and by hand (a truncated one); the JobManager with a launcher that
// shares the filesystem (FakeLauncher) refuses the job naming the field, and accepts it once the
// file is right.
#include "controller/jobs/admission/data_checks.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "common/tokens/token_file.h"
#include "controller/jobs/job_manager.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/unit/controller/fake_launcher.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

JobSpec gptJob(const std::string& train, const std::string& val = "", const std::string& dataset = "tokens") {
  auto spec = decodeJobSpec("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: lm}\nspec:\n"
                            "  model: {type: gpt, vocabSize: 300, contextLength: 16, layers: 1, heads: 2, dModel: 8}\n"
                            "  data: {dataset: " + dataset + ", train: {path: \"" + train + "\"}, val: {path: \"" + val +
                            "\"}}\n  steps: 5\n");
  EXPECT_TRUE(spec.isOk()) << spec.status();
  return spec.isOk() ? *spec : JobSpec{};
}

std::vector<int32_t> tokensOf(int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(i % 300);
  return t;
}

TEST(DataChecksTest, TokenFilesAreCheckedNamingTheFieldAndTheFile) {
  testing::TempDir dir("data_checks_test");
  const std::string good = dir.file("train.bin"), shortFile = dir.file("short.bin"), cut = dir.file("cut.bin");
  ASSERT_TRUE(tokens::writeTokenFile(good, tokensOf(100), tokens::TokenDType::kUint16).isOk());
  ASSERT_TRUE(tokens::writeTokenFile(shortFile, tokensOf(10), tokens::TokenDType::kUint16).isOk());
  ASSERT_TRUE(tokens::writeTokenFile(cut, tokensOf(100), tokens::TokenDType::kUint16).isOk());
  std::filesystem::resize_file(cut, 1024 + 50);  // the header says 100 tokens (200 bytes)
  EXPECT_TRUE(checkDataFiles(gptJob(good)).isOk());
  EXPECT_FALSE(checkDataFiles(gptJob(dir.file("*.bin"))).isOk()) << "the glob takes the cut file too";
  const Status missing = checkDataFiles(gptJob(dir.file("nope.bin")));
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("spec.data.train.path"), std::string::npos) << missing;
  const Status truncated = checkDataFiles(gptJob(cut));
  ASSERT_FALSE(truncated.isOk());
  EXPECT_NE(truncated.message().find("cut.bin"), std::string::npos) << truncated;
  const Status tooShort = checkDataFiles(gptJob(shortFile));
  ASSERT_FALSE(tooShort.isOk()) << "10 tokens hold no window of 17";
  const Status badVal = checkDataFiles(gptJob(good, cut));
  ASSERT_FALSE(badVal.isOk());
  EXPECT_NE(badVal.message().find("spec.data.val.path"), std::string::npos) << badVal;
}

TEST(DataChecksTest, TextFilesMustExistAndHoldAWindow) {
  testing::TempDir dir("data_checks_test");
  std::ofstream(dir.file("a.txt")) << std::string(40, 'x');
  std::ofstream(dir.file("b.txt")) << "tiny";
  EXPECT_TRUE(checkDataFiles(gptJob(dir.file("a.txt"), "", "text")).isOk());
  const Status small = checkDataFiles(gptJob(dir.file("b.txt"), "", "text"));
  ASSERT_FALSE(small.isOk());
  EXPECT_NE(small.message().find("fewer than one window of 17"), std::string::npos) << small;
  EXPECT_FALSE(checkDataFiles(gptJob(dir.file("none*.txt"), "", "text")).isOk());
}

// Through JobManager::submit: refused with the field when the launcher shares the filesystem;
// not checked when it does not (a Kubernetes launcher's workers read their own volumes).
TEST(DataChecksTest, SubmitChecksOnlyWhenTheWorkersShareTheFilesystem) {
  testing::TempDir dir("data_checks_test");
  auto store = SqliteJobStore::open(dir.file("jobs.db"));
  ASSERT_TRUE(store.isOk()) << store.status();
  FakeClock clock;
  for (bool shares : {true, false}) {
    FakeLauncher launcher;
    launcher.setSharesFilesystem(shares);
    JobManagerOptions o;
    JobManager jobs(o, **store, launcher, clock);
    ASSERT_TRUE(jobs.start().isOk());
    JobSpec spec = gptJob(dir.file("missing.bin"));
    spec.name = shares ? "shared" : "apart";
    auto r = jobs.submit(spec);
    if (shares) {
      ASSERT_FALSE(r.isOk());
      EXPECT_NE(r.status().message().find("spec.data.train.path"), std::string::npos) << r.status();
    } else {
      EXPECT_TRUE(r.isOk()) << r.status();
    }
    jobs.stop();
  }
}

}  // namespace
}  // namespace ddp::controller

#include "tests/support/user_data_writers.h"

namespace ddp::controller {
namespace {

JobSpec userJob(const std::string& data, const std::string& model = "mlp") {
  auto spec = decodeJobSpec("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: u}\nspec:\n  model: {type: " +
                            model + "}\n  data: " + data + "\n  epochs: 1\n");
  EXPECT_TRUE(spec.isOk()) << spec.status();
  return spec.isOk() ? *spec : JobSpec{};
}

void expectRefused(const JobSpec& spec, const std::string& words) {
  const Status s = checkDataFiles(spec);
  ASSERT_FALSE(s.isOk()) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s;
}

TEST(DataChecksTest, NpyFilesAreCheckedAtSubmission) {
  testing::TempDir dir("data_checks_test");
  test::writeNpy<float>(dir.file("x.npy"), "<f4", {4, 3}, std::vector<float>(12, 1.f));
  test::writeNpy<int32_t>(dir.file("y.npy"), "<i4", {4}, {0, 1, 0, 1});
  test::writeNpy<int32_t>(dir.file("y3.npy"), "<i4", {3}, {0, 1, 0});
  test::writeNpy<float>(dir.file("yf.npy"), "<f4", {4}, {0, 1, 0, 1});
  test::writeNpyBytes(dir.file("cut.npy"), "<f4", {4, 3}, std::string(40, '\0'));
  test::writeNpy<float>(dir.file("vx.npy"), "<f4", {2, 4}, std::vector<float>(8, 1.f));
  test::writeNpy<int32_t>(dir.file("vy.npy"), "<i4", {2}, {0, 1});
  const auto npy = [&](const std::string& x, const std::string& y, const std::string& more = "") {
    return userJob("{dataset: npy, train: {features: \"" + dir.file(x) + "\", targets: \"" + dir.file(y) + "\"}" +
                   more + "}");
  };
  EXPECT_TRUE(checkDataFiles(npy("x.npy", "y.npy")).isOk()) << checkDataFiles(npy("x.npy", "y.npy"));
  expectRefused(npy("missing.npy", "y.npy"), "spec.data.train.features: " + dir.file("missing.npy"));
  expectRefused(npy("cut.npy", "y.npy"), "spec.data.train.features: " + dir.file("cut.npy") + ": the header says shape (4, 3)");
  expectRefused(npy("x.npy", "y3.npy"), "spec.data.train.targets: " + dir.file("y3.npy") + " has 3 targets but");
  expectRefused(npy("x.npy", "yf.npy"), "float targets (regression): train them with spec.loss: mse");
  // spec.loss: mse takes float targets only; a declared stack is checked against the samples' shape.
  const auto withLoss = [&](const std::string& y, const std::string& model, const std::string& loss) {
    auto spec = decodeJobSpec("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: u}\nspec:\n  model: " + model +
                              "\n  loss: " + loss + "\n  data: {dataset: npy, train: {features: \"" + dir.file("x.npy") +
                              "\", targets: \"" + dir.file(y) + "\"}}\n  epochs: 1\n");
    EXPECT_TRUE(spec.isOk()) << spec.status();
    return spec.isOk() ? *spec : JobSpec{};
  };
  const std::string linear1 = "{type: sequential, stack: [{linear: {out: 1}}]}";
  EXPECT_TRUE(checkDataFiles(withLoss("yf.npy", linear1, "mse")).isOk()) << checkDataFiles(withLoss("yf.npy", linear1, "mse"));
  expectRefused(withLoss("y.npy", linear1, "mse"), "spec.loss: mse needs float targets");
  expectRefused(withLoss("yf.npy", "{type: sequential, stack: [{linear: {out: 2}}]}", "mse"),
                "spec.model.stack: ends in 2 but mse needs [1]");
  expectRefused(withLoss("yf.npy", "{type: sequential, stack: [{conv2d: {out: 2, kernel: 3}}]}", "mse"),
                "spec.model.stack[0].conv2d: needs a [channels, height, width] input, got [3]");
  expectRefused(npy("x.npy", "y.npy", ", val: {features: \"" + dir.file("vx.npy") + "\", targets: \"" +
                                          dir.file("vy.npy") + "\"}"),
                "spec.data.val: samples of shape 4, but the training split's are 3");
  expectRefused(npy("x.npy", "y.npy", ", standardize: {mean: [1, 2], std: [1, 1]}"),
                "spec.data.standardize.mean: 2 values, but the data has 3 features");
  EXPECT_TRUE(checkDataFiles(npy("x.npy", "y.npy", ", standardize: {mean: [1, 2, 3], std: [1, 1, 1]}")).isOk());
  const JobSpec cnn = userJob("{dataset: npy, train: {features: \"" + dir.file("x.npy") + "\", targets: \"" +
                                  dir.file("y.npy") + "\"}}",
                              "cnn");
  expectRefused(cnn, "cnn takes 1x28x28 images, but the training samples are 3");
}

TEST(DataChecksTest, CsvAndIdxFilesAreCheckedAtSubmission) {
  testing::TempDir dir("data_checks_test");
  test::writeText(dir.file("a.csv"), "x,y,label\n1,2,0\n");
  const auto csv = [&](const std::string& f, const std::string& target) {
    return userJob("{dataset: csv, train: {path: \"" + dir.file(f) + "\"}, target: " + target + "}");
  };
  EXPECT_TRUE(checkDataFiles(csv("a.csv", "label")).isOk());
  expectRefused(csv("a.csv", "klass"), "spec.data.train.path: " + dir.file("a.csv") + ": no column 'klass'");
  expectRefused(csv("none.csv", "label"), "spec.data.train.path: " + dir.file("none.csv"));

  std::filesystem::create_directory(dir.file("mnist"));
  const std::string m = dir.file("mnist");
  test::writeIdx(m + "/train-images-idx3-ubyte.gz", {2, 28, 28}, std::vector<uint8_t>(2 * 784, 7), true);
  test::writeIdx(m + "/train-labels-idx1-ubyte.gz", {3}, {0, 1, 2}, true);
  const JobSpec idx = userJob("{dataset: idx, train: {path: \"" + m + "\"}}", "cnn");
  expectRefused(idx, "spec.data.train.path: " + m + "/train-images-idx3-ubyte.gz has 2 images but");
  test::writeIdx(m + "/train-labels-idx1-ubyte.gz", {2}, {0, 1}, true);
  EXPECT_TRUE(checkDataFiles(idx).isOk()) << checkDataFiles(idx);
  expectRefused(userJob("{dataset: idx, train: {path: \"" + m + "\"}, val: {path: \"" + m + "\"}}"),
                "spec.data.val.path: " + m + ": no IDX file named *t10k-images-idx3-ubyte[.gz] or *test-images");
}

// The data paths lie under the allowed roots (Note [Allowed path roots]), checked at submit.
TEST(DataChecksTest, SubmitConfinesDataPathsToTheAllowedRoots) {
  testing::TempDir dir("data_checks_test");
  auto store = SqliteJobStore::open(dir.file("jobs.db"));
  ASSERT_TRUE(store.isOk()) << store.status();
  FakeClock clock;
  FakeLauncher launcher;
  launcher.setSharesFilesystem(false);
  JobManagerOptions o;
  o.paths = PathPolicy({dir.path()}, "");
  JobManager jobs(o, **store, launcher, clock);
  ASSERT_TRUE(jobs.start().isOk());
  JobSpec outside = userJob("{dataset: npy, train: {features: /etc/x.npy, targets: \"" + dir.file("y.npy") + "\"}}");
  auto r = jobs.submit(outside);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("spec.data.train.features: /etc/x.npy is outside the directories"),
            std::string::npos)
      << r.status();
  JobSpec inside = userJob("{dataset: npy, train: {features: \"" + dir.file("x.npy") + "\", targets: \"" +
                           dir.file("y.npy") + "\"}}");
  inside.name = "inside";
  EXPECT_TRUE(jobs.submit(inside).isOk());
  jobs.stop();
}

}  // namespace
}  // namespace ddp::controller
