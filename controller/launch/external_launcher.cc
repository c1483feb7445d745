#include "controller/launch/external_launcher.h"

#include "common/jobspec/job_spec.h"

namespace ddp::controller {

int ExternalLauncher::maxWorkersPerJob() const { return kMaxWorkersPerJob; }

Status ExternalLauncher::ensureWorkers(const JobLaunch& job) { return validateJobName(job.jobName); }

Status ExternalLauncher::killWorker(const std::string& job, const std::string& workerId, int) {
  return unimplemented("the external launcher cannot kill " + workerId + " of job " + job +
                       ": its workers are started by something else");
}

Status ExternalLauncher::replaceWorker(const std::string& job, const std::string& workerId) {
  return unimplemented("the external launcher cannot replace " + workerId + " of job " + job +
                       ": its workers are started by something else");
}

Result<std::unique_ptr<LogStream>> ExternalLauncher::openLog(const std::string& job, const std::string&, LogOptions) {
  return notFound("job " + job + " runs external workers: the controller does not collect their logs");
}

}  // namespace ddp::controller
