// A trainer of one's own, end to end (docs/EXTENDING.md): the engine installed into a prefix
// (cmake --install), examples/custom-trainer built out of tree against it with nothing but
// find_package(DdpEngine), and its two-tower-trainer run by a controller whose local launcher is
// allowed to (--allow-worker-command) through spec.worker.command. Oracles: the job Succeeds
// with the accuracy only a model that reads both views reaches (either view alone caps it at
// one half: examples/custom-trainer/two_view_data.h), and with one worker SIGKILLed by PID
// mid-run the controller replaces it, the survivor keeps its process and the job still Succeeds
// at that accuracy. Minutes: the install and the example's build come first (shared by both
// tests through a lock; incremental after the first).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/fault/fault_harness.h"
#include "tests/integration/cli_process.h"

namespace ddp {
namespace {

using test::FaultHarness;

const std::string kBuildDir = std::string(DDP_TEST_BIN_DIR) + "/..";
const std::string kWork = kBuildDir + "/custom-trainer-test";
const std::string kDdpctl = std::string(DDP_TEST_BIN_DIR) + "/ddpctl";
constexpr double kJobSeconds = 240;
// Ten classes in five pairs; one view tells the pair, the other the member: 0.5 at best alone.
constexpr double kBothViewsAccuracy = 0.9;

// Installs the engine and builds the example (serialised between test processes by a lock
// file); the trainer's path, or "" with the failing step's log in *log.
std::string buildExample(std::string* log) {
  if (std::system(("mkdir -p " + kWork).c_str()) != 0) return *log = "cannot create " + kWork, "";
  const int lock = ::open((kWork + "/lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return *log = "cannot lock " + kWork + "/lock", "";
  const std::string out = kWork + "/build.log";
  const std::string launcher = std::system("command -v ccache >/dev/null") == 0 ? " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache" : "";
  const std::string steps[] = {
      "cmake --install " + kBuildDir + " --prefix " + kWork + "/prefix --component engine",
      "cmake -S " + std::string(DDP_SOURCE_DIR) + "/examples/custom-trainer -B " + kWork + "/build -G Ninja" +
          " -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + kWork + "/prefix" + launcher,
      "cmake --build " + kWork + "/build"};
  std::string path = kWork + "/build/two-tower-trainer";
  for (const std::string& step : steps) {
    if (std::system((step + " >" + out + " 2>&1").c_str()) != 0) {
      std::ifstream in(out);
      *log = step + ":\n" + std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      path.clear();
      break;
    }
  }
  ::close(lock);
  return path;
}

std::string allowBuildDir(controller::ControllerConfig& c) { return c.allowedWorkerCommands.emplace_back(kWork + "/build"); }

TEST(CustomTrainerTest, TwoTowerTrainerSucceedsWithTheAccuracyOfBothViews) {
  std::string log;
  const std::string trainer = buildExample(&log);
  ASSERT_FALSE(trainer.empty()) << log;
  FaultHarness h("local", "127.0.0.1", std::chrono::seconds(5), [](auto& c) { allowBuildDir(c); });
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string yaml = test::faultJobYaml("two-tower", h.dir() + "/ckpt", 1500, 0,
                                              "  worker:\n    command: [" + trainer + ", --tower-width, \"24\"]\n");
  ASSERT_TRUE(h.submit(yaml).isOk());
  ASSERT_TRUE(h.waitPhase("two-tower", "Succeeded", kJobSeconds))
      << h.describeEvents("two-tower") << h.launchedWorkerLog("two-tower", "two-tower-w0");
  const auto rec = h.record("two-tower");
  EXPECT_EQ(rec.progress.step, 1500);
  EXPECT_GE(rec.progress.testAccuracy.value_or(0), kBothViewsAccuracy);
  // The trainer's own model ran (not ddp-worker's MLP): rank 0 logs its description.
  const std::string logs = h.launchedWorkerLog("two-tower", "two-tower-w0") + h.launchedWorkerLog("two-tower", "two-tower-w1");
  EXPECT_NE(logs.find("TwoTower(2 x [16 -> 24, relu] -> 10)"), std::string::npos) << logs;
  // Its checkpoints do not claim to be ddp-worker's MLP: they carry no model description.
  const auto exported = test::runCli({kDdpctl, "export", "--checkpoint-dir", h.dir() + "/ckpt", "-o", h.dir() + "/m.st"}, 60);
  EXPECT_NE(exported.err.find("does not describe its model"), std::string::npos) << exported.err;
}

TEST(CustomTrainerTest, AKilledTwoTowerWorkerIsReplacedAndTheJobSucceeds) {
  std::string log;
  const std::string trainer = buildExample(&log);
  ASSERT_FALSE(trainer.empty()) << log;
  FaultHarness h("local", "127.0.0.1", std::chrono::seconds(5), [](auto& c) { allowBuildDir(c); });
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string yaml = test::faultJobYaml("two-tower-kill", h.dir() + "/ckpt", test::kMidRunSteps, 2,
                                              "  worker:\n    command: [" + trainer + "]\n");
  int64_t step = 0;
  const std::string model = test::runWithFault(h, "two-tower-kill", yaml, h.dir() + "/ckpt", /*rank=*/1, SIGKILL,
                                               /*afterStep=*/100, kJobSeconds, &step);
  EXPECT_FALSE(model.empty()) << "no final checkpoint";
  EXPECT_EQ(step, test::kMidRunSteps);
  EXPECT_GE(h.record("two-tower-kill").progress.testAccuracy.value_or(0), kBothViewsAccuracy);
}

// The service's default: a controller not told --allow-worker-command refuses the job at
// submission, naming the flag; ddp-worker jobs are unaffected.
TEST(CustomTrainerTest, AControllerWithoutTheFlagRefusesAWorkerCommand) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const Status st = h.submit(test::faultJobYaml("refused", h.dir() + "/ckpt", 10, 0,
                                                "  worker:\n    command: [" + test::kFaultBin + "/ddp-worker]\n"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--allow-worker-command"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ddp
