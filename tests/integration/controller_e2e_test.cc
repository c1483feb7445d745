// End to end over loopback with real processes: a ddp-controller process, `ddpctl submit` /
// `ddpctl get` as a user runs them, and real ddp-worker processes started by the controller's
// local launcher training the README's Fashion-MNIST job. The second test SIGKILLs the
// controller mid-job and starts it again on the same state dir: the workers keep training, the
// new controller re-adopts them, and the job ends as an uninterrupted run does (same accuracy,
// bitwise: same seed, same world size, CPU).
// Cleanup: the test stops the controllers it started by PID, and kills any worker still alive by
// the PIDs in the launcher's pid files (workers of the service outlive their controller).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_process.h"
#include "tests/support/controller_process.h"
#include "tests/support/launcher_pid_files.h"
#include "tests/support/temp_dir.h"

namespace ddp {
namespace {

using nlohmann::json;
using test::ControllerProcess;

const std::string kBin = DDP_TEST_BIN_DIR;
const std::string kSource = DDP_SOURCE_DIR;

// The test's directory; the workers its controller started are killed before it is removed.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("controller-e2e") {}
  ~TempDir() { killWorkers(); }
  void killWorkers() const { test::killLauncherWorkers(path() + "/state"); }
};

test::CliResult ddpctl(const std::vector<std::string>& args, const std::string& url, const std::string& tokenFile) {
  std::vector<std::string> argv = {kBin + "/ddpctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--server", url, "--token-file", tokenFile});
  return test::runCli(argv, 30);
}

// Polls `ddpctl get NAME -o json` until the job has finished; returns the job object.
json waitFinished(const std::string& name, const std::string& url, const std::string& tokenFile, double seconds,
                  const std::function<void(const json&)>& onPoll = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  json job;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = ddpctl({"get", name, "-o", "json"}, url, tokenFile);
    if (r.exitCode == 0) {
      job = json::parse(r.out, nullptr, false);
      if (job.is_object()) {
        if (onPoll) onPoll(job);
        const std::string phase = job["status"]["phase"];
        if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled") return job;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return job;
}

TEST(ControllerE2eTest, SubmitTrainsToSucceededAndSurvivesAControllerKill) {
  TempDir dir;
  const std::string state = dir.path() + "/state";
  const std::string token = state + "/token";
  const std::string jobFile = kSource + "/examples/fashion-mnist.yaml";

  ControllerProcess first(state);
  const std::string url = first.start();
  ASSERT_FALSE(url.empty()) << "ddp-controller did not print its address";

  // 1. Uninterrupted.
  auto submitted = ddpctl({"submit", jobFile}, url, token);
  ASSERT_EQ(submitted.exitCode, 0) << submitted.err;
  json done = waitFinished("fashion-mnist", url, token, 300);
  ASSERT_EQ(done["status"]["phase"], "Succeeded") << done.dump(2);
  ASSERT_TRUE(done["status"]["progress"]["testAccuracy"].is_number()) << done.dump(2);
  const double accuracy = done["status"]["progress"]["testAccuracy"];
  EXPECT_GE(accuracy, 0.885) << "the README job's accuracy";
  auto table = ddpctl({"get"}, url, token);
  EXPECT_NE(table.out.find("Succeeded"), std::string::npos) << table.out;

  // 2. The same job again (after a delete, so the name is free), with the controller SIGKILLed
  // once the workers are training, and started again on the same state dir.
  ASSERT_EQ(ddpctl({"delete", "fashion-mnist"}, url, token).exitCode, 0);
  ASSERT_EQ(ddpctl({"submit", jobFile}, url, token).exitCode, 0);
  bool training = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!training && std::chrono::steady_clock::now() < until) {
    auto r = ddpctl({"get", "fashion-mnist", "-o", "json"}, url, token);
    json j = json::parse(r.out, nullptr, false);
    training = j.is_object() && j["status"]["progress"]["step"].is_number() && j["status"]["progress"]["step"].get<int64_t>() > 300;
    if (!training) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(training);
  first.kill(SIGKILL);
  // The workers cannot reach it now; they keep training and their heartbeats retry.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ControllerProcess second(state);
  const std::string port = url.substr(url.rfind(':') + 1);
  std::string url2;
  for (int i = 0; i < 50 && url2.empty(); ++i) {  // the port may take a moment to be free again
    url2 = second.start("127.0.0.1:" + port);
    if (url2.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(url2, url) << "the controller came back on its address";
  json again = waitFinished("fashion-mnist", url2, token, 300);
  ASSERT_EQ(again["status"]["phase"], "Succeeded") << again.dump(2);
  EXPECT_EQ(again["status"]["progress"]["testAccuracy"].get<double>(), accuracy)
      << "the interrupted controller changed nothing about the training";
  auto events = ddpctl({"describe", "fashion-mnist"}, url2, token);
  EXPECT_NE(events.out.find("ControllerRestarted"), std::string::npos) << events.out;
  second.kill(SIGTERM);
}

}  // namespace
}  // namespace ddp
