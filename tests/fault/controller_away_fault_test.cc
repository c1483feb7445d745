// Faults while the controller is down (issue: a worker that died meanwhile failed the job at
// once). A ddp-controller process trains a 2-worker job with checkpoints; it is SIGKILLed, rank 1
// is SIGKILLed while no controller runs, and a new controller starts on the same state dir and
// address. It must treat the dead worker as an ordinary recoverable fault (verdict Exited, one
// restart of the budget, a replacement) and the job trains on.
// Faults are signals sent by PID to the controller process this test started and to a worker its
// launcher started (the pid in the job's record). Cleanup: the controllers are SIGKILLed by their
// harness, every worker in the launcher's pid files by killLauncherWorkers.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "tests/fault/fault_harness.h"
#include "tests/fault/rest_job_client.h"
#include "tests/support/controller_process.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;
using test::RestJobClient;

TEST(ControllerAwayFaultTest, AWorkerThatDiedWhileTheControllerWasDownIsReplacedNotFatal) {
  FaultHarness scratch;  // its temporary directory, worker cleanup and waitFor
  const std::string state = scratch.dir() + "/state2";
  test::LauncherWorkersKiller killWorkers{state};
  test::ControllerProcess first(state);
  const std::string url = first.start();
  ASSERT_FALSE(url.empty()) << "ddp-controller did not start";
  RestJobClient api(url, state);
  std::string body;
  ASSERT_EQ(api.submit(faultJobYaml("away", scratch.dir() + "/ckpt", 200000, 3), &body), 201) << body;
  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.events("away").find("CheckpointCommitted") != std::string::npos; }))
      << api.events("away");
  const int64_t pid1 = api.pidOfRank("away", 1);
  ASSERT_GT(pid1, 0);

  first.kill(SIGKILL);
  ASSERT_EQ(::kill(static_cast<pid_t>(pid1), SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  test::ControllerProcess second(state);
  ASSERT_EQ(second.restartOn(url), url);

  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.events("away").find("Recovered:") != std::string::npos; }))
      << api.phase("away") << "\n" << api.events("away");
  const nlohmann::json job = api.job("away");
  EXPECT_EQ(job["status"]["phase"], "Running") << job.dump(2);
  EXPECT_EQ(job["status"]["restarts"], 1) << "one restart of the budget, as for any dead worker";
  const std::string events = api.events("away");
  EXPECT_NE(events.find("ended while the controller was away"), std::string::npos) << events;
  EXPECT_NE(api.pidOfRank("away", 1), pid1) << "a replacement holds rank 1";
  ASSERT_EQ(api.cancel("away"), 200);
  ASSERT_TRUE(scratch.waitFor(60, [&] { return api.phase("away") == "Cancelled"; })) << api.events("away");
  second.kill(SIGTERM);
}

}  // namespace
}  // namespace ddp
