#pragma once
// Shared fixture for the LocalLauncher tests: a private state directory, /bin/sh scripts as
// fake workers, an exit recorder, and a cleanup that kills every process the test saw.
// Every test tracks the identity (pid + start time) of each worker it learns about; TearDown
// SIGKILLs the ones still alive (by identity, so a reused pid is never hit) and reaps them.
// Thread model: the fixture runs on the test thread; ExitRecorder is fed by the launcher's
// monitor thread.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/checkpoint/atomic_file.h"
#include "controller/launch/local_launcher.h"
#include "controller/launch/pid_file.h"
#include "tests/support/temp_dir.h"

namespace ddp::controller::testing {

// Collects the launcher's exit reports.
class ExitRecorder {
 public:
  Launcher::ExitCallback callback() {
    return [this](const WorkerExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_.push_back(e);
      cv_.notify_all();
    };
  }
  // Waits until `n` exits were reported (true) or `timeout` passed.
  bool waitForCount(size_t n, Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return exits_.size() >= n; });
  }
  std::vector<WorkerExit> exits() {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_;
  }
  const WorkerExit* find(const std::vector<WorkerExit>& all, const std::string& workerId) {
    for (const auto& e : all) {
      if (e.workerId == workerId) return &e;
    }
    return nullptr;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WorkerExit> exits_;  // guarded by mu_
};

class LauncherTest : public ::testing::Test {
 protected:
  void TearDown() override {
    launcher_.reset();
    killTracked();  // before dir_ goes, with everything in it
  }

  LocalLauncherOptions options(const std::string& script) {
    LocalLauncherOptions o;
    o.stateDir = stateDir_;
    o.workerBinary = "/bin/sh";
    o.args = {"-c", script};
    o.monitorPeriod = std::chrono::milliseconds(50);
    o.onExit = exits_.callback();
    return o;
  }

  std::unique_ptr<LocalLauncher> make(LocalLauncherOptions o) {
    auto l = LocalLauncher::create(std::move(o));
    EXPECT_TRUE(l.isOk()) << l.status();
    return l.isOk() ? std::move(l).value() : nullptr;
  }

  static JobLaunch job(const std::string& name, int workers) {
    JobLaunch j;
    j.jobName = name;
    j.workers = workers;
    j.env.controllerUrl = "http://127.0.0.1:9";
    j.env.jobToken = "secret-token";
    j.env.logFormat = "human";
    j.extraEnv = {"EXTRA_VAR=extra-value"};
    return j;
  }

  // Remembers the identity of every pid (for TearDown's cleanup).
  void track(const std::vector<int64_t>& pids) {
    for (int64_t pid : pids) {
      auto st = readProcStat(pid);
      if (st.isOk()) tracked_.push_back({pid, st->startTime});
    }
  }

  // Waits until `job` has exactly `n` live pids; returns them sorted (and tracks them).
  std::vector<int64_t> waitForPids(LocalLauncher& l, const std::string& job, size_t n,
                                   Duration timeout = std::chrono::seconds(3)) {
    const Deadline d = Deadline::after(timeout);
    std::vector<int64_t> pids;
    while (!d.expired()) {
      pids = l.livePids(job);
      if (pids.size() == n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::sort(pids.begin(), pids.end());
    track(pids);
    return pids;
  }

  // Everything in the log now (non-following read to the end).
  static std::string readAll(LocalLauncher& l, const std::string& job, const std::string& worker,
                             LogOptions o = {}) {
    auto s = l.openLog(job, worker, o);
    if (!s.isOk()) return "<" + s.status().toString() + ">";
    std::string all;
    for (int i = 0; i < 10000; ++i) {
      auto r = (*s)->read(Deadline::after(std::chrono::seconds(1)));
      if (!r.isOk()) break;
      all += *r;
    }
    return all;
  }

  // Waits until the log of `worker` contains `text`.
  static bool waitForLog(LocalLauncher& l, const std::string& job, const std::string& worker,
                         const std::string& text, Duration timeout = std::chrono::seconds(3)) {
    const Deadline d = Deadline::after(timeout);
    while (!d.expired()) {
      if (readAll(l, job, worker).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  static bool alive(int64_t pid) {
    auto st = readProcStat(pid);
    return st.isOk() && st->alive();
  }

  void killTracked() {
    for (const auto& id : tracked_) {
      if (isSameLiveProcess(id)) ::kill(static_cast<pid_t>(id.pid), SIGKILL);
    }
    for (const auto& id : tracked_) {
      // Reap our own children (a no-op for others); bounded: SIGKILL is prompt.
      for (int i = 0; i < 200; ++i) {
        const pid_t r = ::waitpid(static_cast<pid_t>(id.pid), nullptr, WNOHANG);
        if (r != 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    tracked_.clear();
  }

  test::TempDir dir_{"ddp-launcher-test"};
  const std::string stateDir_ = dir_.path();
  ExitRecorder exits_;
  std::unique_ptr<LocalLauncher> launcher_;
  std::vector<ProcessIdentity> tracked_;
};

}  // namespace ddp::controller::testing
