#include "controller/launch/launcher.h"

#include <algorithm>
#include <cstring>

#include "common/jobspec/job_spec.h"

namespace ddp::controller {

std::string WorkerExit::describe() const {
  std::string s = "worker " + workerId;
  if (!startError.empty()) return s + " could not be started: " + startError;
  s += " (pid " + std::to_string(pid) + ")";
  if (!statusKnown) {
    s += " ended (exit status unknown: adopted, not a child of this process)";
  } else if (signaled) {
    s += " killed by signal " + std::to_string(code) + " (" + ::strsignal(code) + ")";
  } else {
    s += " exited with status " + std::to_string(code);
  }
  if (killedByLauncher) s += " after the launcher signalled it";
  return s;
}

namespace {
// "<job>-w<slot>": the one place the worker-id format is written (workerIdFor, slotOfWorkerId).
constexpr char kSlotMark[] = "-w";
}  // namespace

JobLaunch makeJobLaunch(const std::string& name, const JobSpec& spec, const std::string& token,
                        const WorkerLaunchSettings& settings) {
  JobLaunch l;
  l.jobName = name;
  l.workers = spec.workers.count;
  l.perPod = spec.workers.perPod;
  l.env.controllerUrl = settings.controllerUrl;
  l.env.jobName = name;
  l.env.jobToken = token;
  l.env.logFormat = settings.logFormat;
  l.env.checkpointDir = settings.checkpointDir;
  l.env.commThreadPriority = settings.commThreadPriority;
  l.command = spec.worker.command;
  return l;
}

std::string workerIdFor(const std::string& job, int slot) { return job + kSlotMark + std::to_string(slot); }

std::optional<int> slotOfWorkerId(const std::string& job, const std::string& workerId) {
  const std::string prefix = job + kSlotMark;
  if (workerId.size() <= prefix.size() || workerId.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string digits = workerId.substr(prefix.size());
  if (digits.size() > 6 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int slot = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    slot = slot * 10 + (c - '0');
  }
  return slot;
}

std::vector<std::string> workerIdsOfPod(const std::string& job, int podSlot, int perPod) {
  std::vector<std::string> ids;
  for (int l = 0; l < perPod; ++l) ids.push_back(workerIdFor(job, podSlot * perPod + l));
  return ids;
}

std::optional<int> podOfWorkerId(const std::string& job, const std::string& workerId, int perPod) {
  const std::optional<int> slot = slotOfWorkerId(job, workerId);
  if (!slot || perPod < 1) return std::nullopt;
  return *slot / perPod;
}

std::vector<std::string> withPodSiblings(const std::string& job, const std::vector<std::string>& ids, int perPod) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& id) {
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  };
  for (const std::string& id : ids) {
    add(id);
    if (perPod <= 1) continue;
    if (auto pod = podOfWorkerId(job, id, perPod)) {
      for (const std::string& sibling : workerIdsOfPod(job, *pod, perPod)) add(sibling);
    }
  }
  return out;
}

Status validateJobName(const std::string& job) {
  if (job.empty() || job.size() > 63) return invalidArgument("job name must have 1 to 63 characters");
  if (job[0] == '.') return invalidArgument("job name '" + job + "' must not start with '.'");
  for (char c : job) {
    const bool okChar = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '.' || c == '_' || c == '-';
    if (!okChar) return invalidArgument("job name '" + job + "' may hold only [A-Za-z0-9._-]");
  }
  return Status::ok();
}

}  // namespace ddp::controller
