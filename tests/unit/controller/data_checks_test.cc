// Note [Data checks at submission]: a gpt job's token or text files are checked when the job is
// submitted to a controller whose workers share its filesystem. Real files in a temp dir, written
// with the project's writer and by hand (a truncated one); the JobManager with a launcher that
// shares the filesystem (FakeLauncher) refuses the job naming the field, and accepts it once the
// file is right.
#include "controller/jobs/data_checks.h"

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
