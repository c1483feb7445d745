#pragma once
// A Launcher that starts nothing and records what the JobManager asks of it (kills, replacements,
// stops), for the JobManager tests that play the workers themselves.
// Thread model: called from the JobManager's ticker and the test's thread; guarded by mu_.

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "controller/launch/launcher.h"

namespace ddp::controller {

class FakeLauncher final : public Launcher {
 public:
  std::string name() const override { return "fake"; }
  Status ready() const override { return Status::ok(); }
  int maxWorkersPerJob() const override { return 16; }
  Status ensureWorkers(const JobLaunch&) override { return Status::ok(); }
  Status adoptJob(const JobLaunch&) override { return Status::ok(); }
  Status killWorker(const std::string&, const std::string& workerId, int signal) override {
    std::lock_guard<std::mutex> lock(mu_);
    kills_.emplace_back(workerId, signal);
    return Status::ok();
  }
  Status replaceWorker(const std::string&, const std::string& workerId) override {
    std::lock_guard<std::mutex> lock(mu_);
    replaced_.push_back(workerId);
    return Status::ok();
  }
  void holdReplacements(const std::string&, bool) override {}
  Result<std::unique_ptr<LogStream>> openLog(const std::string&, const std::string&, LogOptions) override {
    return unimplemented("fake launcher: no logs");
  }
  Status stopJob(const std::string&, Duration grace) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++stops_;
    stopGraces_.push_back(grace);
    return Status::ok();
  }
  Status forgetJob(const std::string&) override { return Status::ok(); }
  std::vector<int64_t> livePids(const std::string&) const override { return {}; }
  bool sharesFilesystem() const override { return shares_; }
  void setSharesFilesystem(bool shares) { shares_ = shares; }

  std::vector<int> signalsTo(const std::string& workerId) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int> out;
    for (const auto& [id, sig] : kills_) {
      if (id == workerId) out.push_back(sig);
    }
    return out;
  }
  std::vector<std::string> replaced() const {
    std::lock_guard<std::mutex> lock(mu_);
    return replaced_;
  }
  int stops() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stops_;
  }
  // The grace of every stopJob so far, in order.
  std::vector<Duration> stopGraces() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopGraces_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, int>> kills_;  // guarded by mu_
  std::vector<std::string> replaced_;               // guarded by mu_
  int stops_ = 0;                                   // guarded by mu_
  std::vector<Duration> stopGraces_;                // guarded by mu_
  bool shares_ = false;                             // set before the JobManager uses it
};

}  // namespace ddp::controller
