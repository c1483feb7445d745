// NcclOptions validation, createNcclBackend's answer in builds or machines without NCCL/GPU, and
// the abort deadline (Note [NCCL abort deadline]) with a fake abort: no GPU needed, every build.
// (The GPU tests are in nccl_backend_cuda_test.cc.)
#include "worker/comm/nccl_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/store/in_memory_store.h"
#include "worker/comm/nccl_backend_abort.h"

namespace ddp::comm {
namespace {

TEST(NcclOptionsTest, ValidateNamesTheField) {
  NcclOptions o;
  EXPECT_TRUE(o.validate().isOk());
  o.rank = 2;
  o.size = 2;
  EXPECT_NE(o.validate().message().find("rank 2 out of range"), std::string::npos);
  o = {};
  o.prefix = "";
  EXPECT_NE(o.validate().message().find("prefix"), std::string::npos);
  o = {};
  o.timeout = Duration::zero();
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
  o = {};
  o.device = -1;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
}

TEST(NcclBackendFactoryTest, CpuOnlyBuildAnswersUnimplemented) {
  InMemoryStore store;
  NcclOptions bad;
  bad.size = 0;
  EXPECT_EQ(createNcclBackend(bad, store).status().code(), StatusCode::kInvalidArgument);
  if (ncclBackendAvailable()) GTEST_SKIP() << "this build has the NCCL backend";
  auto b = createNcclBackend(NcclOptions{}, store);
  EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(b.status().message().find("DDP_WITH_CUDA"), std::string::npos);
}

// A fake ncclCommAbort that blocks until released (never, within the test's deadline).
struct StuckAbort {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;  // guarded by mu
  bool returned = false;  // guarded by mu
  void run() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
    returned = true;
    cv.notify_all();
  }
  // Lets the helper thread finish (it is detached) and waits, bounded, until it did.
  bool releaseAndWait() {
    std::unique_lock<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return returned; });
  }
};

TEST(NcclAbortDeadlineTest, AnAbortThatReturnsInTimeIsNotReportedHung) {
  std::atomic<int> calls{0};
  std::vector<std::string> hung;
  const AbortOutcome o = runAbortUnderDeadline([&calls] { ++calls; }, std::chrono::seconds(5),
                                               [&](const std::string& m) { hung.push_back(m); }, "ncclCommAbort on g");
  EXPECT_EQ(o, AbortOutcome::kReturned);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(hung.empty());
}

TEST(NcclAbortDeadlineTest, AnAbortThatNeverReturnsCallsOnAbortHungAfterTheTimeout) {
  auto stuck = std::make_shared<StuckAbort>();
  std::vector<std::string> hung;
  const auto start = std::chrono::steady_clock::now();
  const AbortOutcome o = runAbortUnderDeadline(
      [stuck] { stuck->run(); }, std::chrono::milliseconds(200), [&](const std::string& m) { hung.push_back(m); },
      "ncclCommAbort on nccl:g rank 1/2 (abort: op timed out)");
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(o, AbortOutcome::kHung);
  EXPECT_GE(waited, std::chrono::milliseconds(200)) << "the caller waits out the deadline";
  EXPECT_LT(waited, std::chrono::seconds(3)) << "... and no longer";
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0], "ncclCommAbort on nccl:g rank 1/2 (abort: op timed out) did not return within 0.2 s");
  EXPECT_TRUE(stuck->releaseAndWait()) << "the abort goes on, on its own thread, after the caller gave up";
}

// What a NcclBackend's abort does with NcclOptions::onAbortHung: a callback that returns lets it
// go on (tests); the default ends the worker with kWorkerExitAbortHung so it is replaced.
TEST(NcclAbortDeadlineTest, OptionsCarryTheDeadlineAndTheHandler) {
  NcclOptions o;
  EXPECT_EQ(o.abortTimeout, kDefaultNcclAbortTimeout);
  auto stuck = std::make_shared<StuckAbort>();
  std::string message;
  o.abortTimeout = std::chrono::milliseconds(50);
  o.onAbortHung = [&](const std::string& m) { message = m; };
  ASSERT_TRUE(o.validate().isOk());
  EXPECT_EQ(runAbortUnderDeadline([stuck] { stuck->run(); }, o.abortTimeout, o.onAbortHung, "abort"),
            AbortOutcome::kHung);
  EXPECT_EQ(message, "abort did not return within 0.1 s");
  EXPECT_TRUE(stuck->releaseAndWait());
  o.abortTimeout = Duration::zero();
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
  o = {};
  o.onAbortHung = nullptr;
  EXPECT_NE(o.validate().message().find("onAbortHung"), std::string::npos);
}

TEST(NcclAbortDeadlineDeathTest, TheDefaultHandlerExitsSoTheWorkerIsReplaced) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exitOnNcclAbortHung("ncclCommAbort on g did not return within 10.0 s"),
              ::testing::ExitedWithCode(kWorkerExitAbortHung), "did not return within 10.0 s");
}

}  // namespace
}  // namespace ddp::comm
