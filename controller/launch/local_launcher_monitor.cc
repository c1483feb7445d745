// LocalLauncher's monitor thread and re-adoption (Note [Launcher threads], Note [Re-adoption]).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/checkpoint/atomic_file.h"
#include "common/log.h"
#include "controller/launch/local_launcher.h"
#include "common/process/pidfd.h"

namespace ddp::controller {
namespace {

// Reaps `pidfd`'s process if it is our child and has ended. Returns false when it has not
// ended yet; `known` says whether `si` holds its status.
bool reap(int pidfd, siginfo_t* si, bool* known) {
  std::memset(si, 0, sizeof(*si));
  const int r = ::waitid(P_PIDFD, pidfd, si, WEXITED | WNOHANG);
  if (r == 0 && si->si_pid == 0) return false;
  *known = r == 0;
  return true;
}

void fillStatus(const siginfo_t& si, bool known, WorkerExit* e) {
  e->statusKnown = known;
  if (!known) return;
  e->signaled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
  e->code = si.si_status;
}

int pollMillis(Duration d) {
  const auto ms = (std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() + 999999) / 1000000;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

constexpr const char* kPidSuffix = ".pid";

}  // namespace

void LocalLauncher::adoptFromStateDir() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> adopted;
  for (const auto& job : runtime::listDir(options_.stateDir + "/jobs").valueOr({})) {
    if (!validateJobName(job).isOk()) continue;
    const std::string dir = jobDir(job) + "/workers/";
    for (const auto& file : runtime::listDir(dir).valueOr({})) {
      if (file.find(".pid.tmp.") != std::string::npos) {  // a write cut short by a crash
        ::unlink((dir + file).c_str());
        continue;
      }
      if (file.size() <= 4 || file.compare(file.size() - 4, 4, kPidSuffix) != 0) continue;
      const std::string workerId = file.substr(0, file.size() - 4);
      const auto index = slotOfWorkerId(job, workerId);
      if (!index) continue;
      Slot& slot = slotLocked(jobs_[job], job, *index);
      slot.everStarted = true;
      Report r;
      r.exit.jobName = job;
      r.exit.workerId = workerId;
      r.exit.slot = *index;
      r.exit.statusKnown = false;
      r.log = slot.log;
      auto id = readPidFile(dir + file);
      if (id.isOk()) {
        r.exit.pid = id->pid;
        // pidfd first, identity second: a pidfd opened while the pid was still the recorded
        // process's stays that process's (Note [Pid files and process identity]).
        const int fd = pidfdOpen(static_cast<pid_t>(id->pid));
        auto st = readProcStat(id->pid);
        if (fd >= 0 && st.isOk() && st->startTime == id->startTime) {
          if (st->alive()) {
            slot.proc = Proc{*id, fd, /*adopted=*/true, /*signalled=*/false, /*logFloor=*/0};
            adopted.insert(job);
            continue;
          }
          siginfo_t si;
          bool known = false;
          if (reap(fd, &si, &known)) fillStatus(si, known, &r.exit);  // our own zombie
        }
        if (fd >= 0) ::close(fd);
      }
      ::unlink((dir + file).c_str());
      pendingReports_.push_back(std::move(r));
    }
  }
  adopted_.assign(adopted.begin(), adopted.end());
}

void LocalLauncher::monitorLoop() {
  while (!stopping_.load()) {
    deliverReports();
    std::vector<pollfd> fds{{wakeFd_, POLLIN, 0}};
    TimePoint nextKill = TimePoint::max();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [name, job] : jobs_) {
        nextKill = std::min(nextKill, job.killAt);
        for (const auto& [index, slot] : job.slots) {
          if (slot.proc) fds.push_back({slot.proc->pidfd, POLLIN, 0});
        }
      }
      for (const auto& p : graveyard_) fds.push_back({p.pidfd, POLLIN, 0});
    }
    const TimePoint now = SystemClock::instance().now();
    Duration wait = options_.monitorPeriod - (now - lastRotation_);
    if (nextKill != TimePoint::max()) wait = std::min<Duration>(wait, nextKill - now);
    ::poll(fds.data(), fds.size(), pollMillis(wait));
    if (stopping_.load()) break;
    uint64_t drained;
    ssize_t n = ::read(wakeFd_, &drained, sizeof(drained));
    (void)n;
    std::set<int> ended;
    for (size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents != 0) ended.insert(fds[k].fd);
    }
    // Only this thread closes installed pidfds, so the numbers polled above are still theirs.
    if (!ended.empty()) reapExited(ended);
    escalateStops();
    if (SystemClock::instance().now() - lastRotation_ >= options_.monitorPeriod) {
      rotateLogs();
      lastRotation_ = SystemClock::instance().now();
    }
  }
}

void LocalLauncher::reapExited(const std::set<int>& readyPidfds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, job] : jobs_) {
    for (auto& [index, slot] : job.slots) {
      if (!slot.proc || readyPidfds.count(slot.proc->pidfd) == 0) continue;
      siginfo_t si;
      bool known = false;
      if (!reap(slot.proc->pidfd, &si, &known)) continue;
      Report r;
      r.exit.jobName = name;
      r.exit.workerId = slot.workerId;
      r.exit.slot = index;
      r.exit.pid = slot.proc->id.pid;
      r.exit.killedByLauncher = slot.proc->signalled;
      fillStatus(si, known, &r.exit);
      r.log = slot.log;
      r.logFloor = slot.proc->logFloor;
      r.fromReap = true;
      ::close(slot.proc->pidfd);
      ::unlink(pidPath(name, slot.workerId).c_str());
      slot.proc.reset();
      slot.exitPending = true;
      pendingReports_.push_back(std::move(r));
    }
  }
  for (auto it = graveyard_.begin(); it != graveyard_.end();) {
    siginfo_t si;
    bool known = false;
    if (readyPidfds.count(it->pidfd) != 0 && reap(it->pidfd, &si, &known)) {
      ::close(it->pidfd);
      it = graveyard_.erase(it);
    } else {
      ++it;
    }
  }
}

void LocalLauncher::escalateStops() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = SystemClock::instance().now();
  for (auto& [name, job] : jobs_) {
    if (job.killAt > now) continue;
    job.killAt = TimePoint::max();
    for (auto& [index, slot] : job.slots) {
      if (!slot.proc) continue;
      DDP_LOG(Info) << "worker " << slot.workerId << " outlived the stop grace period: SIGKILL";
      signalLocked(*slot.proc, SIGKILL);
    }
  }
}

void LocalLauncher::rotateLogs() {
  std::vector<std::shared_ptr<WorkerLog>> logs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, job] : jobs_) {
      for (const auto& [index, slot] : job.slots) {
        if (slot.proc) logs.push_back(slot.log);
      }
    }
  }
  for (const auto& log : logs) {
    auto rotated = log->rotateIfOver(options_.maxLogBytes);
    if (!rotated.isOk()) {
      DDP_LOG(Warning) << "log rotation of " << log->path() << ": " << rotated.status();
    }
  }
}

void LocalLauncher::deliverReports() {
  std::vector<Report> reports;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reports.swap(pendingReports_);
  }
  if (reports.empty()) return;
  for (auto& r : reports) {
    if (r.log) r.exit.lastLines = r.log->lastLines(kExitReportLines, r.logFloor);
    if (options_.onExit) options_.onExit(r.exit);
  }
  std::set<std::string> toStart;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& r : reports) {
      if (!r.fromReap) continue;
      auto job = jobs_.find(r.exit.jobName);
      if (job == jobs_.end()) continue;
      auto slot = job->second.slots.find(r.exit.slot);
      if (slot == job->second.slots.end()) continue;
      slot->second.exitPending = false;
      if (startableLocked(job->second, slot->second)) toStart.insert(r.exit.jobName);
    }
    refreshFinishedLocked();
  }
  for (const auto& job : toStart) {
    spawner_->post([this, job] { (void)startSlots(job, /*reportFailures=*/true); });
  }
}

}  // namespace ddp::controller
