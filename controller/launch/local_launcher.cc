#include "controller/launch/local_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/checkpoint/atomic_file.h"
#include "common/log.h"
#include "common/usable_cores.h"
#include "controller/launch/log_stream.h"
#include "common/process/pidfd.h"
#include "controller/launch/worker_spawn.h"

namespace ddp::controller {
namespace {

constexpr int kMaxWorkersCap = 256;

// Signals after which the process is expected to end (reported as killedByLauncher).
bool endsProcess(int sig) {
  return sig != 0 && sig != SIGSTOP && sig != SIGCONT && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU;
}

// Waits until every pidfd is readable (its process ended) or `deadline`; closes them.
void awaitExitsAndClose(std::vector<int> fds, Deadline deadline) {
  while (!fds.empty() && !deadline.expired()) {
    std::vector<pollfd> p;
    for (int fd : fds) p.push_back({fd, POLLIN, 0});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count() + 1;
    if (::poll(p.data(), p.size(), static_cast<int>(ms)) <= 0) continue;
    std::vector<int> left;
    for (const auto& x : p) {
      if (x.revents == 0) {
        left.push_back(x.fd);
      } else {
        ::close(x.fd);
      }
    }
    fds = std::move(left);
  }
  for (int fd : fds) ::close(fd);
}

}  // namespace

struct LocalLauncher::Planned {
  SpawnSpec spec;
  std::string workerId;
  int64_t logFloor = 0;
};

Status LocalLauncherOptions::validate() const {
  if (stateDir.empty()) return invalidArgument("launcher stateDir is empty");
  if (workerBinary.empty() || workerBinary[0] != '/') {
    return invalidArgument("launcher workerBinary must be an absolute path, got '" + workerBinary + "'");
  }
  if (maxLogBytes < 4096) return invalidArgument("launcher maxLogBytes must be at least 4096");
  if (maxWorkersPerJob < 0 || maxWorkersPerJob > kMaxWorkersCap) {
    return invalidArgument("launcher maxWorkersPerJob must be 0 (auto) to " + std::to_string(kMaxWorkersCap));
  }
  if (monitorPeriod <= Duration::zero() || monitorPeriod > std::chrono::seconds(1)) {
    return invalidArgument("launcher monitorPeriod must be in (0, 1s]");
  }
  return Status::ok();
}

int LocalLauncherOptions::effectiveMaxWorkersPerJob() const {
  return maxWorkersPerJob > 0 ? maxWorkersPerJob : std::min(kMaxWorkersCap, 4 * usableCores());
}

Result<std::unique_ptr<LocalLauncher>> LocalLauncher::create(LocalLauncherOptions options) {
  DDP_RETURN_IF_ERROR(options.validate());
  if (::access(options.workerBinary.c_str(), X_OK) != 0) {
    return invalidArgument("worker binary " + options.workerBinary + " is not executable: " + std::strerror(errno));
  }
  const int self = pidfdOpen(::getpid());
  if (self < 0) return unimplemented(std::string("pidfd_open (Linux >= 5.4 needed): ") + std::strerror(errno));
  ::close(self);
  DDP_RETURN_IF_ERROR(runtime::makeDirs(options.stateDir + "/jobs").withContext("launcher state dir"));
  std::unique_ptr<LocalLauncher> l(new LocalLauncher(std::move(options)));
  l->wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->wakeFd_ < 0) return unavailable(std::string("eventfd: ") + std::strerror(errno));
  l->adoptFromStateDir();
  l->spawner_ = std::make_unique<SerialExecutor>();
  l->monitor_ = std::thread([p = l.get()] { p->monitorLoop(); });
  return l;
}

LocalLauncher::LocalLauncher(LocalLauncherOptions options)
    : options_(std::move(options)), maxWorkers_(options_.effectiveMaxWorkersPerJob()) {}

LocalLauncher::~LocalLauncher() {
  stopping_.store(true);
  wakeMonitor();
  if (monitor_.joinable()) monitor_.join();
  spawner_.reset();  // with tieToParent, the kernel now SIGKILLs the workers (PDEATHSIG)
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Proc*> procs;
  for (auto& [name, job] : jobs_) {
    for (auto& [index, slot] : job.slots) {
      slot.log->setFinished(true);
      if (slot.proc) procs.push_back(&*slot.proc);
    }
  }
  for (auto& p : graveyard_) procs.push_back(&p);
  if (options_.tieToParent) {
    std::vector<int> waitFds;
    for (Proc* p : procs) {
      pidfdSendSignal(p->pidfd, SIGKILL);
      waitFds.push_back(::fcntl(p->pidfd, F_DUPFD_CLOEXEC, 0));
    }
    awaitExitsAndClose(std::move(waitFds), Deadline::after(kForgetWait));
  }
  for (Proc* p : procs) {
    siginfo_t si;
    std::memset(&si, 0, sizeof(si));
    if (options_.tieToParent || !p->adopted) ::waitid(P_PIDFD, p->pidfd, &si, WEXITED | WNOHANG);
    ::close(p->pidfd);
  }
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

std::string LocalLauncher::jobDir(const std::string& job) const { return options_.stateDir + "/jobs/" + job; }
std::string LocalLauncher::logPath(const std::string& job, const std::string& workerId) const {
  return jobDir(job) + "/logs/" + workerId + ".log";
}
std::string LocalLauncher::pidPath(const std::string& job, const std::string& workerId) const {
  return jobDir(job) + "/workers/" + workerId + ".pid";
}

LocalLauncher::Slot& LocalLauncher::slotLocked(Job& job, const std::string& jobName, int slot) {
  auto [it, inserted] = job.slots.try_emplace(slot);
  if (inserted) {
    it->second.workerId = workerIdFor(jobName, slot);
    it->second.log = std::make_shared<WorkerLog>(logPath(jobName, it->second.workerId));
  }
  return it->second;
}

bool LocalLauncher::startableLocked(const Job& job, const Slot& slot) {
  if (!job.launch || job.stopped || slot.proc || slot.starting || slot.exitPending) return false;
  return !slot.everStarted || (slot.replaceWanted && !job.hold);
}

void LocalLauncher::signalLocked(Proc& proc, int signal) {
  if (pidfdSendSignal(proc.pidfd, signal) == 0 && endsProcess(signal)) proc.signalled = true;
}

void LocalLauncher::refreshFinishedLocked() {
  for (auto& [name, job] : jobs_) {
    for (auto& [index, slot] : job.slots) {
      if (job.stopped && !slot.proc && !slot.starting && !slot.exitPending) slot.log->setFinished(true);
    }
  }
}

void LocalLauncher::wakeMonitor() {
  const uint64_t one = 1;
  ssize_t n = ::write(wakeFd_, &one, sizeof(one));
  (void)n;
}

std::optional<WorkerMemoryBudget> LocalLauncher::workerMemory(int workers, int, const std::string&) const {
  const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0 || workers <= 0) return std::nullopt;
  const int64_t total = static_cast<int64_t>(pages) * pageSize;
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f GiB", static_cast<double>(total) / (int64_t{1} << 30));
  return WorkerMemoryBudget{total / workers,
                            "this machine's " + std::string(gib) + " of memory shared by " + std::to_string(workers) +
                                " worker(s)",
                            ""};
}

Status LocalLauncher::ready() const {
  if (stopping_.load()) return unavailable("the local launcher is shutting down");
  if (::access(options_.workerBinary.c_str(), X_OK) != 0) {
    return unavailable("worker binary " + options_.workerBinary + " is not executable: " + std::strerror(errno));
  }
  const std::string jobs = options_.stateDir + "/jobs";
  if (::access(jobs.c_str(), W_OK) != 0) return unavailable(jobs + " is not writable: " + std::strerror(errno));
  return Status::ok();
}

std::vector<std::string> LocalLauncher::adoptedJobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return adopted_;
}

std::vector<int64_t> LocalLauncher::livePids(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out;
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return out;
  for (const auto& [index, slot] : it->second.slots) {
    if (slot.proc) out.push_back(slot.proc->id.pid);
  }
  return out;
}

Status LocalLauncher::ensureWorkers(const JobLaunch& job) {
  DDP_RETURN_IF_ERROR(validateJobName(job.jobName));
  if (job.workers < 1 || job.workers > maxWorkers_) {
    return invalidArgument("job " + job.jobName + ": workers must be 1 to " + std::to_string(maxWorkers_) +
                           ", got " + std::to_string(job.workers));
  }
  return spawner_->run([this, job] { return ensureOnSpawner(job); }, Deadline::after(kCommandTimeout))
      .withContext("ensureWorkers " + job.jobName);
}

Status LocalLauncher::adoptJob(const JobLaunch& launch) {
  DDP_RETURN_IF_ERROR(validateJobName(launch.jobName));
  return spawner_
      ->run(
          [this, launch] {
            DDP_RETURN_IF_ERROR(runtime::makeDirs(jobDir(launch.jobName) + "/logs"));
            DDP_RETURN_IF_ERROR(runtime::makeDirs(jobDir(launch.jobName) + "/workers"));
            std::lock_guard<std::mutex> lock(mu_);
            Job& job = jobs_[launch.jobName];
            job.launch = launch;
            for (int s = 0; s < launch.workers; ++s) slotLocked(job, launch.jobName, s).everStarted = true;
            return Status::ok();
          },
          Deadline::after(kCommandTimeout))
      .withContext("adoptJob " + launch.jobName);
}

Status LocalLauncher::killWorker(const std::string& job, const std::string& workerId, int signal) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  const auto index = slotOfWorkerId(job, workerId);
  if (it == jobs_.end() || !index) return notFound("no worker " + workerId + " in job " + job);
  auto slot = it->second.slots.find(*index);
  if (slot == it->second.slots.end() || !slot->second.proc) return notFound("no live worker " + workerId);
  Proc& proc = *slot->second.proc;
  if (pidfdSendSignal(proc.pidfd, signal) != 0) {
    if (errno == ESRCH) return notFound("worker " + workerId + " has already exited");
    if (errno == EINVAL) return invalidArgument("no signal " + std::to_string(signal));
    return unavailable("signal " + std::to_string(signal) + " to " + workerId + ": " + std::strerror(errno));
  }
  if (endsProcess(signal)) proc.signalled = true;
  return Status::ok();
}

Status LocalLauncher::replaceWorker(const std::string& job, const std::string& workerId) {
  DDP_RETURN_IF_ERROR(validateJobName(job));
  return spawner_->run([this, job, workerId] { return replaceOnSpawner(job, workerId); },
                       Deadline::after(kCommandTimeout))
      .withContext("replaceWorker " + workerId);
}

void LocalLauncher::holdReplacements(const std::string& job, bool hold) {
  if (!validateJobName(job).isOk()) return;
  Status s = spawner_->run(
      [this, job, hold] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = jobs_.find(job);
          if (it == jobs_.end() && !hold) return Status::ok();
          (it == jobs_.end() ? jobs_[job] : it->second).hold = hold;  // may precede ensureWorkers
        }
        return hold ? Status::ok() : startSlots(job, /*reportFailures=*/true);
      },
      Deadline::after(kCommandTimeout));
  if (!s.isOk()) {
    DDP_LOG(Warning) << "holdReplacements " << job << ": " << s;
  }
}

Status LocalLauncher::stopJob(const std::string& job, Duration grace) {
  if (grace < Duration::zero()) grace = options_.grace;
  return spawner_->run([this, job, grace] { return stopOnSpawner(job, grace); }, Deadline::after(kCommandTimeout))
      .withContext("stopJob " + job);
}

Status LocalLauncher::forgetJob(const std::string& job) {
  DDP_RETURN_IF_ERROR(validateJobName(job));
  return spawner_->run([this, job] { return forgetOnSpawner(job); }, Deadline::after(kCommandTimeout))
      .withContext("forgetJob " + job);
}

Result<std::unique_ptr<LogStream>> LocalLauncher::openLog(const std::string& job, const std::string& workerId,
                                                          LogOptions options) {
  DDP_RETURN_IF_ERROR(validateJobName(job));
  std::optional<int> only;
  if (!workerId.empty()) {
    only = slotOfWorkerId(job, workerId);
    if (!only) return notFound("no worker " + workerId + " in job " + job);
  }
  std::vector<std::pair<int, std::shared_ptr<WorkerLog>>> logs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = jobs_.find(job); it != jobs_.end()) {
      for (const auto& [index, slot] : it->second.slots) {
        if (!only || *only == index) logs.emplace_back(index, slot.log);
      }
    }
  }
  if (logs.empty()) {  // not ours (any more): whatever is on disk, nobody writing
    auto names = runtime::listDir(jobDir(job) + "/logs");
    for (const auto& n : names.valueOr({})) {
      if (n.size() < 5 || n.compare(n.size() - 4, 4, ".log") != 0) continue;
      const auto index = slotOfWorkerId(job, n.substr(0, n.size() - 4));
      if (!index || (only && *only != *index)) continue;
      auto log = std::make_shared<WorkerLog>(jobDir(job) + "/logs/" + n);
      log->setFinished(true);
      logs.emplace_back(*index, std::move(log));
    }
  }
  if (logs.empty()) return notFound("no log for " + (workerId.empty() ? "job " + job : "worker " + workerId));
  if (only) return std::unique_ptr<LogStream>(std::make_unique<WorkerLogStream>(logs[0].second, options, ""));
  std::vector<std::unique_ptr<WorkerLogStream>> parts;
  for (auto& [index, log] : logs) {
    parts.push_back(std::make_unique<WorkerLogStream>(log, options, "[w" + std::to_string(index) + "] "));
  }
  return std::unique_ptr<LogStream>(std::make_unique<MergedLogStream>(std::move(parts)));
}

// ---- Spawner thread ----

Status LocalLauncher::ensureOnSpawner(const JobLaunch& launch) {
  const std::string& name = launch.jobName;
  DDP_RETURN_IF_ERROR(runtime::makeDirs(jobDir(name) + "/logs"));
  DDP_RETURN_IF_ERROR(runtime::makeDirs(jobDir(name) + "/workers"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job& job = jobs_[name];
    if (job.stopped) {  // start afresh, once everything from the last run has ended
      for (auto& [index, slot] : job.slots) {
        if (slot.proc || slot.starting) {
          return failedPrecondition("job " + name + " is stopping: " + slot.workerId + " has not ended yet");
        }
      }
      job.stopped = false;
      job.killAt = TimePoint::max();
      for (auto& [index, slot] : job.slots) {
        slot.everStarted = false;
        slot.replaceWanted = false;
        slot.log->setFinished(false);
      }
    }
    job.launch = launch;
    for (int s = 0; s < launch.workers; ++s) slotLocked(job, name, s);
  }
  return startSlots(name, /*reportFailures=*/false);
}

Status LocalLauncher::replaceOnSpawner(const std::string& job, const std::string& workerId) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    const auto index = slotOfWorkerId(job, workerId);
    if (it == jobs_.end() || !index) return notFound("no worker " + workerId + " in job " + job);
    Job& j = it->second;
    auto slot = j.slots.find(*index);
    if (slot == j.slots.end()) return notFound("no worker " + workerId + " in job " + job);
    if (!j.launch) {
      return failedPrecondition("job " + job + " was adopted after a restart: call ensureWorkers before replaceWorker");
    }
    if (j.stopped) return failedPrecondition("job " + job + " is stopped");
    Slot& s = slot->second;
    s.replaceWanted = true;
    if (s.proc) {  // the monitor reports its exit, then asks for the replacement
      signalLocked(*s.proc, SIGKILL);
      return Status::ok();
    }
    if (s.exitPending || j.hold || s.starting) return Status::ok();
  }
  return startSlots(job, /*reportFailures=*/false);
}

Status LocalLauncher::stopOnSpawner(const std::string& job, Duration grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return notFound("no job " + job);
    Job& j = it->second;
    j.stopped = true;
    j.killAt = TimePoint::max();
    bool any = false;
    for (auto& [index, slot] : j.slots) {
      slot.replaceWanted = false;
      if (slot.proc) {
        signalLocked(*slot.proc, SIGTERM);
        any = true;
      }
    }
    if (any) j.killAt = SystemClock::instance().now() + grace;
    refreshFinishedLocked();
  }
  wakeMonitor();
  return Status::ok();
}

Status LocalLauncher::forgetOnSpawner(const std::string& job) {
  std::vector<int> waitFds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = jobs_.find(job); it != jobs_.end()) {
      for (auto& [index, slot] : it->second.slots) {
        slot.log->setFinished(true);
        if (!slot.proc) continue;
        signalLocked(*slot.proc, SIGKILL);
        const int dup = ::fcntl(slot.proc->pidfd, F_DUPFD_CLOEXEC, 0);
        if (dup >= 0) waitFds.push_back(dup);
        graveyard_.push_back(*slot.proc);  // the monitor reaps it without a report
      }
      jobs_.erase(it);
    }
  }
  wakeMonitor();
  awaitExitsAndClose(std::move(waitFds), Deadline::after(kForgetWait));
  return runtime::removeAll(jobDir(job));
}

Status LocalLauncher::startSlots(const std::string& job, bool reportFailures) {
  std::vector<std::pair<int, Planned>> plans;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end() || !it->second.launch) return Status::ok();
    Job& j = it->second;
    const JobLaunch& launch = *j.launch;
    std::vector<std::string> base;
    for (auto& [index, slot] : j.slots) {
      if (!startableLocked(j, slot)) continue;
      if (base.empty()) base = currentEnvironment();
      slot.starting = true;
      launch::WorkerEnv env = launch.env;
      env.workerId = slot.workerId;
      env.jobName = job;
      Planned p;
      if (launch.command.empty()) {
        p.spec.exe = options_.workerBinary;
        p.spec.args = options_.args;
      } else {  // Note [Worker commands]: the job's program, allowed at submission
        p.spec.exe = launch.command.front();
        p.spec.args.assign(launch.command.begin() + 1, launch.command.end());
      }
      p.spec.env = mergeEnvironment(mergeEnvironment(base, launch::workerEnvironment(env)), launch.extraEnv);
      p.spec.logPath = slot.log->path();
      p.spec.tieToParent = options_.tieToParent;
      p.workerId = slot.workerId;
      p.logFloor = slot.log->endOffset();
      plans.emplace_back(index, std::move(p));
    }
  }
  Status first;
  for (const auto& [index, plan] : plans) {
    Status s = startOne(job, index, plan, reportFailures);
    if (!s.isOk() && first.isOk()) first = s;
  }
  if (!plans.empty()) wakeMonitor();
  return first;
}

Status LocalLauncher::startOne(const std::string& job, int index, const Planned& plan, bool reportFailures) {
  auto spawned = spawnWorker(plan.spec, Deadline::after(kExecReportTimeout));
  Status st = spawned.status();
  if (spawned.isOk()) {
    st = writePidFile(pidPath(job, plan.workerId), spawned->id);
    if (!st.isOk()) {  // unrecorded, it could not be re-adopted: do not keep it
      pidfdSendSignal(spawned->pidfd, SIGKILL);
      siginfo_t si;
      ::waitid(P_PIDFD, spawned->pidfd, &si, WEXITED);
      ::close(spawned->pidfd);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = jobs_[job].slots[index];  // present: only this thread erases jobs
  slot.starting = false;
  if (st.isOk()) {
    slot.proc = Proc{spawned->id, spawned->pidfd, /*adopted=*/false, /*signalled=*/false, plan.logFloor};
    slot.everStarted = true;
    slot.replaceWanted = false;
    slot.log->setFinished(false);
    return Status::ok();
  }
  st = st.withContext("starting worker " + plan.workerId);
  DDP_LOG(Warning) << st;
  if (reportFailures) {
    slot.everStarted = true;
    slot.replaceWanted = false;
    Report r;
    r.exit.jobName = job;
    r.exit.workerId = plan.workerId;
    r.exit.slot = index;
    r.exit.startError = st.message();
    pendingReports_.push_back(std::move(r));
    wakeMonitor();
  }
  return st;
}

}  // namespace ddp::controller
