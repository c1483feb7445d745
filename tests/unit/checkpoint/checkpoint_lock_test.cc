// CheckpointLock against real files and real processes: a second job is refused while the first
// holds the lock; one process releases and takes it again; a SIGKILLed holder leaves it free.
#include "common/checkpoint/checkpoint_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/checkpoint/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ckpt_lock_test") {}
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Deadline soon() { return Deadline::after(std::chrono::milliseconds(300)); }

TEST(CheckpointLockTest, HolderRoundTripsAndAPartialFileIsRejected) {
  LockHolder h{"mnist", "00ff", 4242, "node-1", 1700000000000};
  auto back = LockHolder::decode(h.encode(), "LOCK");
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->job, "mnist");
  EXPECT_EQ(back->runId, "00ff");
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->host, "node-1");
  EXPECT_EQ(back->sinceUnixMs, 1700000000000);
  EXPECT_TRUE(contains(h.describe(), "job 'mnist' (run 00ff, pid 4242 on host node-1, since 2023-11-14T22:13:20Z)"))
      << h.describe();
  const std::string text = h.encode();
  EXPECT_EQ(LockHolder::decode(text.substr(0, text.size() / 2), "LOCK").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(LockHolder::decode("", "LOCK").status().code(), StatusCode::kDataLoss);
}

TEST(CheckpointLockTest, AnotherJobIsRefusedNamingTheHolderWhileTheFirstHoldsIt) {
  TempDir dir;
  auto first = CheckpointLock::acquire(dir.path(), "job-a", soon());
  ASSERT_TRUE(first.isOk()) << first.status();
  EXPECT_TRUE(first->held());
  EXPECT_EQ(first->path(), dir.path() + "/LOCK");
  auto onDisk = CheckpointLock::readHolder(dir.path());
  ASSERT_TRUE(onDisk.isOk()) << onDisk.status();
  EXPECT_EQ(onDisk->job, "job-a");
  EXPECT_EQ(onDisk->pid, ::getpid());
  EXPECT_EQ(onDisk->runId, first->holder().runId);
  EXPECT_EQ(onDisk->runId.size(), 16u);

  const auto t0 = std::chrono::steady_clock::now();
  auto second = CheckpointLock::acquire(dir.path(), "job-b", Deadline::after(std::chrono::seconds(30)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "another job is refused at once";
  ASSERT_FALSE(second.isOk());
  const Status& st = second.status();
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), "checkpoint directory " + dir.path() + " is in use by job 'job-a'")) << st;
  EXPECT_TRUE(contains(st.message(), "pid " + std::to_string(::getpid()))) << st;
  EXPECT_TRUE(contains(st.message(), "run " + first->holder().runId)) << st;
  EXPECT_TRUE(contains(st.message(), "job 'job-b' cannot share it")) << st;
}

TEST(CheckpointLockTest, OneProcessReleasesAndTakesItAgain) {
  TempDir dir;
  {
    auto a = CheckpointLock::acquire(dir.path(), "job", soon());
    ASSERT_TRUE(a.isOk()) << a.status();
  }  // destroyed: released (a trainer destroyed for in-process recovery)
  auto b = CheckpointLock::acquire(dir.path(), "job", soon());
  ASSERT_TRUE(b.isOk()) << b.status();
  b->release();
  EXPECT_FALSE(b->held());
  b->release();  // idempotent
  auto c = CheckpointLock::acquire(dir.path(), "other-job", soon());  // free: anyone may take it
  ASSERT_TRUE(c.isOk()) << c.status();
  CheckpointLock moved = std::move(*c);
  EXPECT_TRUE(moved.held());
  EXPECT_FALSE(CheckpointLock::acquire(dir.path(), "job", soon()).isOk()) << "the moved-to lock still holds it";
}

TEST(CheckpointLockTest, SameJobWaitsForTheHolderThenGivesUpNamingIt) {
  TempDir dir;
  auto held = CheckpointLock::acquire(dir.path(), "job", soon());
  ASSERT_TRUE(held.isOk()) << held.status();
  const auto t0 = std::chrono::steady_clock::now();
  auto again = CheckpointLock::acquire(dir.path(), "job", Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200)) << "waited for the holder";
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(again.status().message(), "still locked by another run of job 'job'")) << again.status();
  EXPECT_TRUE(contains(again.status().message(), dir.path())) << again.status();

  // The holder lets go while a same-job run waits: the waiter takes it over.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    held->release();
  });
  auto takeover = CheckpointLock::acquire(dir.path(), "job", Deadline::after(std::chrono::seconds(10)));
  releaser.join();
  ASSERT_TRUE(takeover.isOk()) << takeover.status();
  EXPECT_EQ(CheckpointLock::readHolder(dir.path())->runId, takeover->holder().runId);
}

// The holder is SIGKILLed: the kernel drops its flock, so the lock file left behind (naming the
// dead process) is no obstacle, for another job too.
TEST(CheckpointLockTest, LockOfASigkilledProcessIsFree) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto lock = CheckpointLock::acquire(dir.path(), "killed-job", Deadline::after(std::chrono::seconds(5)));
    const char ok = lock.isOk() ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    if (!lock.isOk()) ::_exit(1);
    for (;;) ::pause();  // holds the lock until killed
  }
  // Kills and reaps the child if an assertion returns early.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } reaper{child};
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(ok, 'y') << "the child took the lock";

  auto refused = CheckpointLock::acquire(dir.path(), "next-job", soon());
  ASSERT_FALSE(refused.isOk());
  EXPECT_TRUE(contains(refused.status().message(), "job 'killed-job'")) << refused.status();
  EXPECT_TRUE(contains(refused.status().message(), "pid " + std::to_string(child))) << refused.status();

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  reaper.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
  EXPECT_EQ(CheckpointLock::readHolder(dir.path())->pid, child) << "the file still names the dead holder";

  auto taken = CheckpointLock::acquire(dir.path(), "next-job", soon());
  ASSERT_TRUE(taken.isOk()) << taken.status();
  auto holder = CheckpointLock::readHolder(dir.path());
  ASSERT_TRUE(holder.isOk()) << holder.status();
  EXPECT_EQ(holder->job, "next-job");
  EXPECT_EQ(holder->pid, ::getpid());
}

TEST(CheckpointLockTest, MissingDirectoryIsReportedWithTheSystemReason) {
  TempDir dir;
  auto lock = CheckpointLock::acquire(dir.path() + "/absent", "job", soon());
  ASSERT_FALSE(lock.isOk());
  EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(lock.status().message(), dir.path() + "/absent/LOCK: No such file or directory"))
      << lock.status();
  EXPECT_EQ(CheckpointLock::readHolder(dir.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ddp::runtime
