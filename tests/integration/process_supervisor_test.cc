// ProcessSupervisor with real processes. The workers are fake_worker_proc (faked: the training;
// real: fork/exec, pipes, exit statuses, signals, the grace period).
#include "common/process/process_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

namespace ddp::runtime {
namespace {

const std::string kFake = std::string(DDP_TEST_BIN_DIR) + "/tests/fake_worker_proc";

struct Captured {
  std::vector<std::string> out, err;
  bool errHas(const std::string& s) const {
    for (const auto& l : err) {
      if (l.find(s) != std::string::npos) return true;
    }
    return false;
  }
};

std::vector<ProcessSpec> specs(const std::vector<std::string>& modes) {
  std::vector<ProcessSpec> v;
  for (size_t r = 0; r < modes.size(); ++r) {
    v.push_back({kFake, modes, {"DDP_RANK=" + std::to_string(r)}});
  }
  return v;
}

SupervisorOutcome runJob(const std::vector<std::string>& modes, Captured* cap,
                         SupervisorOptions opts = {}, Duration limit = std::chrono::seconds(30),
                         std::function<void(ProcessSupervisor&)> during = nullptr) {
  ProcessSupervisor sup(opts, [cap](const RoutedLine& l) {
    (l.target == RouteTarget::kStdout ? cap->out : cap->err).push_back(l.text);
  });
  EXPECT_TRUE(sup.start(specs(modes)).isOk());
  std::thread t;
  if (during) t = std::thread([&] { during(sup); });
  auto outcome = sup.run(Deadline::after(limit));
  if (t.joinable()) t.join();
  EXPECT_TRUE(outcome.isOk());
  return *outcome;
}

TEST(OutputRouterTest, RoutesRankZeroProgressAndEveryonesWarnings) {
  OutputRouter router(2, 3);
  EXPECT_EQ(OutputRouter::logLevelOf("[j r1] W a.cc:2] x"), 'W');
  EXPECT_EQ(OutputRouter::logLevelOf("E a.cc:2] x"), 'E');
  EXPECT_EQ(OutputRouter::logLevelOf("Everything fine"), 0);
  auto a = router.feed(0, StreamKind::kStdout, "step 1\nstep", 11);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].target, RouteTarget::kStdout);
  EXPECT_EQ(a[0].text, "step 1");
  auto b = router.feed(0, StreamKind::kStdout, " 2\n", 3);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].text, "step 2");
  EXPECT_TRUE(router.feed(1, StreamKind::kStdout, "step 1\n", 7).empty());   // other ranks' progress
  EXPECT_TRUE(router.feed(1, StreamKind::kStderr, "I x.cc:1] hi\n", 13).empty());
  auto w = router.feed(1, StreamKind::kStderr, "W x.cc:1] slow\n", 15);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].text, "[rank 1] W x.cc:1] slow");
  auto crash = router.feed(1, StreamKind::kStderr, "terminate called\n", 17);
  ASSERT_EQ(crash.size(), 1u);
  EXPECT_EQ(crash[0].text, "[rank 1] terminate called");
  // Tail keeps the last 3 lines of rank 1, dropped ones included.
  EXPECT_EQ(std::vector<std::string>(router.tail(1).begin(), router.tail(1).end()),
            (std::vector<std::string>{"I x.cc:1] hi", "W x.cc:1] slow", "terminate called"}));
}

TEST(ProcessSupervisorTest, AllWorkersSucceed) {
  Captured cap;
  auto o = runJob({"ok", "ok"}, &cap);
  EXPECT_TRUE(o.allOk());
  ASSERT_EQ(o.exits.size(), 2u);
  EXPECT_EQ(cap.out, (std::vector<std::string>{"step 1 rank 0 progress", "done rank 0"}));
  EXPECT_TRUE(cap.errHas("[job r1] W fake_worker.cc:2] rank 1 warning"));
  EXPECT_TRUE(cap.errHas("[rank 0] I fake_worker.cc:1] rank 0 info"));
  EXPECT_FALSE(cap.errHas("rank 1 info"));
}

TEST(ProcessSupervisorTest, FailedWorkerIsReportedWithLastLinesAndOthersStop) {
  Captured cap;
  auto o = runJob({"wait", "fail", "wait"}, &cap);
  EXPECT_FALSE(o.allOk());
  ASSERT_TRUE(o.firstFailure.has_value());
  EXPECT_EQ(o.firstFailure->rank, 1);
  EXPECT_EQ(o.firstFailure->code, 3);
  EXPECT_TRUE(cap.errHas("worker rank 1 exited with status 3")) << cap.err.size();
  EXPECT_TRUE(cap.errHas("rank 1's last error: E fake_worker.cc:3] rank 1: dataset missing"));
  EXPECT_TRUE(cap.errHas("  | E fake_worker.cc:3] rank 1: dataset missing"));
  EXPECT_TRUE(cap.errHas("  | step 1 rank 1 progress"));  // dropped from the view, kept in the tail
  // The others received SIGTERM and stopped cleanly.
  EXPECT_TRUE(o.exits[0].ok());
  EXPECT_TRUE(o.exits[2].ok());
  EXPECT_EQ(cap.out.back(), "rank 0 stopped cleanly");
}

TEST(ProcessSupervisorTest, CrashIsReportedBySignal) {
  Captured cap;
  auto o = runJob({"wait", "crash"}, &cap);
  ASSERT_TRUE(o.firstFailure.has_value());
  EXPECT_TRUE(o.firstFailure->signaled);
  EXPECT_EQ(o.firstFailure->code, SIGABRT);
  EXPECT_TRUE(cap.errHas("rank 1 killed by signal 6"));
  EXPECT_TRUE(cap.errHas("  | about to abort"));
}

TEST(ProcessSupervisorTest, StubbornWorkerIsKilledAfterGrace) {
  Captured cap;
  SupervisorOptions opts;
  opts.grace = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto o = runJob({"stubborn", "fail"}, &cap, opts);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(o.exits[0].signaled);
  EXPECT_EQ(o.exits[0].code, SIGKILL);
  EXPECT_TRUE(o.exits[0].killedBySupervisor);
  EXPECT_TRUE(cap.errHas("grace period"));
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST(ProcessSupervisorTest, StopRequestForwardsSigtermAndWorkersExitCleanly) {
  Captured cap;
  auto o = runJob({"wait", "wait"}, &cap, {}, std::chrono::seconds(30), [](ProcessSupervisor& s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s.requestStop(SIGINT);
  });
  EXPECT_TRUE(o.stopRequested);
  EXPECT_EQ(o.stopSignal, SIGINT);
  EXPECT_FALSE(o.firstFailure.has_value());
  EXPECT_TRUE(o.exits[0].ok());
  EXPECT_TRUE(o.exits[1].ok());
  EXPECT_EQ(cap.out.back(), "rank 0 stopped cleanly");
}

TEST(ProcessSupervisorTest, DeadlineStopsTheJob) {
  Captured cap;
  auto o = runJob({"wait", "wait"}, &cap, {}, std::chrono::milliseconds(300));
  EXPECT_TRUE(o.timedOut);
  EXPECT_FALSE(o.allOk());
  EXPECT_TRUE(cap.errHas("time limit"));
}

TEST(ProcessSupervisorTest, MissingBinaryFailsWith127) {
  Captured cap;
  ProcessSupervisor sup({}, [&](const RoutedLine& l) { cap.err.push_back(l.text); });
  ASSERT_TRUE(sup.start({{"/nonexistent/ddp-worker", {}, {}}}).isOk());
  auto o = sup.run(Deadline::after(std::chrono::seconds(10)));
  ASSERT_TRUE(o.isOk());
  ASSERT_TRUE(o->firstFailure.has_value());
  EXPECT_EQ(o->firstFailure->code, 127);
  EXPECT_TRUE(cap.errHas("exec of the worker binary failed"));
}

}  // namespace
}  // namespace ddp::runtime
