// Worker logs: WorkerLog (rotation, offsets, tails) on plain files, then LocalLauncher's
// openLog (tail, follow, merged) and its size cap with real writers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "controller/launch/log_stream.h"
#include "controller/launch/worker_log.h"
#include "tests/unit/controller/launcher_test_util.h"

namespace ddp::controller {
namespace {

using namespace std::chrono_literals;
using testing::LauncherTest;

class WorkerLogTest : public LauncherTest {
 protected:
  void append(const std::string& text) {
    const int fd = ::open(path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  std::string path() const { return stateDir_ + "/w.log"; }
  static int64_t size(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 ? st.st_size : -1;
  }
  static std::string numbered(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
    return s;
  }
  static std::string drain(LogStream& s) {
    std::string all;
    while (!s.done()) {
      auto r = s.read(Deadline::after(100ms));
      if (!r.isOk()) break;
      all += *r;
    }
    return all;
  }
};

TEST_F(WorkerLogTest, TailCountsLinesAndCompletesAPartialLastLine) {
  auto log = std::make_shared<WorkerLog>(path());
  EXPECT_TRUE(log->lastLines(20, 0).empty());
  append("a\nb\n\nc\npartial");
  EXPECT_EQ(log->lastLines(2, 0), (std::vector<std::string>{"c", "partial"}));
  EXPECT_EQ(log->lastLines(10, 0), (std::vector<std::string>{"a", "b", "", "c", "partial"}));
  EXPECT_EQ(log->lastLines(10, 2), (std::vector<std::string>{"b", "", "c", "partial"}));  // floor
  WorkerLogStream tail2(log, {.tailLines = 2, .follow = false}, "");
  EXPECT_EQ(drain(tail2), "c\npartial\n");
  EXPECT_TRUE(tail2.done());
  EXPECT_EQ(tail2.read(Deadline::after(10ms)).status().code(), StatusCode::kOutOfRange);
  WorkerLogStream none(log, {.tailLines = 0, .follow = false}, "");
  EXPECT_EQ(drain(none), "");
  WorkerLogStream all(log, {}, "[w0] ");
  EXPECT_EQ(drain(all), "[w0] a\n[w0] b\n[w0] \n[w0] c\n[w0] partial\n");
}

TEST_F(WorkerLogTest, RotationKeepsTheLastPartAndReadersContinue) {
  auto log = std::make_shared<WorkerLog>(path());
  append(numbered(1, 100));  // 100 lines of 7-9 bytes
  WorkerLogStream follower(log, {.tailLines = -1, .follow = true}, "");
  auto first = follower.read(Deadline::after(100ms));
  ASSERT_TRUE(first.isOk());
  EXPECT_EQ(*first, numbered(1, 100));
  const int64_t before = log->endOffset();
  ASSERT_TRUE(log->rotateIfOver(4096).isOk());
  EXPECT_FALSE(*log->rotateIfOver(4096));  // under the cap: nothing to do
  append(numbered(101, 700));              // ~5.4 KB: over the cap
  ASSERT_TRUE(*log->rotateIfOver(4096));
  EXPECT_EQ(size(path()), 0);
  const int64_t kept = size(log->rotatedPath());
  EXPECT_GT(kept, 0);
  EXPECT_LE(kept, 2048);
  EXPECT_EQ(log->endOffset(), before + static_cast<int64_t>(numbered(101, 700).size()));
  append(numbered(701, 705));
  // The rotated part is a whole-line suffix; the live file continues it.
  std::ifstream rotated(log->rotatedPath());
  std::stringstream buf;
  buf << rotated.rdbuf();
  EXPECT_EQ(buf.str().back(), '\n');
  EXPECT_EQ(buf.str().rfind("line 700\n"), buf.str().size() - 9);
  EXPECT_EQ(log->lastLines(7, 0),
            (std::vector<std::string>{"line 699", "line 700", "line 701", "line 702", "line 703", "line 704", "line 705"}));
  // The follower was at line 100: lines rotated away are skipped, the rest arrives in order.
  std::string rest;
  for (int i = 0; i < 10; ++i) {
    auto r = follower.read(Deadline::after(20ms));
    ASSERT_TRUE(r.isOk());
    rest += *r;
  }
  EXPECT_EQ(rest.substr(rest.size() - numbered(690, 705).size()), numbered(690, 705));
  EXPECT_EQ(rest.find("line 101\n"), std::string::npos);
  EXPECT_FALSE(follower.done());
  // A new reader from the start sees .1 then the live file.
  WorkerLogStream fresh(log, {}, "");
  EXPECT_EQ(drain(fresh), buf.str() + numbered(701, 705));
  // A follower ends once the log is finished and read.
  log->setFinished(true);
  EXPECT_EQ(drain(follower), "");
  EXPECT_TRUE(follower.done());
}

TEST_F(WorkerLogTest, ANewWorkerLogOnExistingFilesStartsAtTheRotatedPart) {
  { std::ofstream(path() + ".1") << numbered(1, 3); }
  append(numbered(4, 5));
  auto log = std::make_shared<WorkerLog>(path());
  EXPECT_EQ(log->beginOffset(), 0);
  EXPECT_EQ(log->endOffset(), static_cast<int64_t>(numbered(1, 5).size()));
  WorkerLogStream all(log, {}, "");
  EXPECT_EQ(drain(all), numbered(1, 5));
  WorkerLogStream tail(log, {.tailLines = 3, .follow = false}, "");
  EXPECT_EQ(drain(tail), numbered(3, 5));
}

class LocalLauncherLogsTest : public LauncherTest {};

TEST_F(LocalLauncherLogsTest, TailFollowAndMerged) {
  launcher_ = make(options(
      "i=0; while [ $i -lt 10 ]; do i=$((i+1)); echo \"$DDP_WORKER_ID tick $i\"; sleep 0.05; done; exec sleep 30"));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("logs", 2)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "logs", 2).size(), 2u);
  // Follow from the start while the worker writes.
  auto follow = launcher_->openLog("logs", "logs-w1", {.tailLines = -1, .follow = true});
  ASSERT_TRUE(follow.isOk()) << follow.status();
  std::string seen;
  const Deadline d = Deadline::after(5s);
  while (seen.find("logs-w1 tick 10\n") == std::string::npos && !d.expired()) {
    auto r = (*follow)->read(Deadline::after(200ms));
    ASSERT_TRUE(r.isOk()) << r.status();
    seen += *r;
  }
  std::string expected;
  for (int i = 1; i <= 10; ++i) expected += "logs-w1 tick " + std::to_string(i) + "\n";
  EXPECT_EQ(seen, expected);
  auto nothing = (*follow)->read(Deadline::after(100ms));  // nothing new: empty, not the end
  ASSERT_TRUE(nothing.isOk());
  EXPECT_EQ(*nothing, "");
  EXPECT_FALSE((*follow)->done());
  // Tail of the last 3 lines, not following.
  ASSERT_TRUE(waitForLog(*launcher_, "logs", "logs-w0", "logs-w0 tick 10"));
  EXPECT_EQ(readAll(*launcher_, "logs", "logs-w0", {.tailLines = 3, .follow = false}),
            "logs-w0 tick 8\nlogs-w0 tick 9\nlogs-w0 tick 10\n");
  // Merged: every worker, each line prefixed with its slot.
  const std::string merged = readAll(*launcher_, "logs", "", {.tailLines = 1, .follow = false});
  EXPECT_NE(merged.find("[w0] logs-w0 tick 10\n"), std::string::npos) << merged;
  EXPECT_NE(merged.find("[w1] logs-w1 tick 10\n"), std::string::npos) << merged;
  EXPECT_EQ(std::count(merged.begin(), merged.end(), '\n'), 2);
  EXPECT_EQ(launcher_->openLog("logs", "logs-w9", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(launcher_->openLog("nojob", "", {}).status().code(), StatusCode::kNotFound);
  // Stopping ends the follow stream once the worker is gone.
  ASSERT_TRUE(launcher_->stopJob("logs", 1s).isOk());
  const Deadline end = Deadline::after(3s);
  while (!(*follow)->done() && !end.expired()) (void)(*follow)->read(Deadline::after(100ms));
  EXPECT_TRUE((*follow)->done());
  EXPECT_EQ((*follow)->read(Deadline::after(10ms)).status().code(), StatusCode::kOutOfRange);
  ASSERT_TRUE(launcher_->forgetJob("logs").isOk());
}

TEST_F(LocalLauncherLogsTest, LogsAreCappedWhileTheWorkerWrites) {
  auto o = options(
      "i=0; while [ $i -lt 600 ]; do i=$((i+1)); "
      "echo \"line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"; "
      "if [ $((i % 30)) = 0 ]; then sleep 0.04; fi; done; echo done; exec sleep 30");
  o.maxLogBytes = 4096;
  o.monitorPeriod = 20ms;
  launcher_ = make(o);
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("cap", 1)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "cap", 1).size(), 1u);
  auto follow = launcher_->openLog("cap", "cap-w0", {.tailLines = -1, .follow = true});
  ASSERT_TRUE(follow.isOk());
  std::string seen;
  const Deadline d = Deadline::after(8s);
  while (seen.find("done\n") == std::string::npos && !d.expired()) {
    auto r = (*follow)->read(Deadline::after(100ms));
    ASSERT_TRUE(r.isOk());
    seen += *r;
  }
  ASSERT_NE(seen.find("done\n"), std::string::npos);
  std::this_thread::sleep_for(200ms);  // a few monitor periods: any due rotation has run
  const std::string live = stateDir_ + "/jobs/cap/logs/cap-w0.log";
  struct stat a, b;
  ASSERT_EQ(::stat(live.c_str(), &a), 0);
  ASSERT_EQ(::stat((live + ".1").c_str(), &b), 0);  // it rotated
  // ~38 KB written; on disk: the live file under the cap, the kept part in .1 (the last half,
  // plus what arrived during the copy: Note [Log rotation]).
  EXPECT_LE(a.st_size, 4096);
  EXPECT_LE(b.st_size, 4096);
  // Whatever the follower saw is in order, without duplicates, ending with the last lines.
  std::istringstream in(seen);
  std::string line;
  int last = 0;
  while (std::getline(in, line) && line != "done") {
    const int n = std::stoi(line.substr(5));
    EXPECT_GT(n, last) << line;
    last = n;
  }
  EXPECT_EQ(last, 600);
  // A fresh read from the start begins with what rotation kept and ends with the last line.
  const std::string all = readAll(*launcher_, "cap", "cap-w0");
  EXPECT_EQ(all.rfind("line 1 "), std::string::npos);
  EXPECT_NE(all.find("line 600 x"), std::string::npos);
  ASSERT_TRUE(launcher_->forgetJob("cap").isOk());
}

}  // namespace
}  // namespace ddp::controller
