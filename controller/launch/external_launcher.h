#pragma once
// ExternalLauncher: for workers that something else starts (a batch scheduler, a test or a
// benchmark's simulated workers): the controller runs rendezvous, store and heartbeats for
// them but starts, kills and collects the logs of nothing. ddp-controller --launcher external.
// Thread model: stateless and thread-safe.

#include "controller/launch/launcher.h"

namespace ddp::controller {

class ExternalLauncher final : public Launcher {
 public:
  std::string name() const override { return "external"; }
  Status ready() const override { return Status::ok(); }
  int maxWorkersPerJob() const override;
  Status ensureWorkers(const JobLaunch& job) override;
  Status adoptJob(const JobLaunch&) override { return Status::ok(); }  // it starts nothing anyway
  Status killWorker(const std::string& job, const std::string& workerId, int signal) override;
  Status replaceWorker(const std::string& job, const std::string& workerId) override;
  void holdReplacements(const std::string&, bool) override {}
  Result<std::unique_ptr<LogStream>> openLog(const std::string& job, const std::string& workerId,
                                             LogOptions options) override;
  Status stopJob(const std::string&, Duration) override { return Status::ok(); }
  Status forgetJob(const std::string&) override { return Status::ok(); }
  std::vector<int64_t> livePids(const std::string&) const override { return {}; }
};

}  // namespace ddp::controller
