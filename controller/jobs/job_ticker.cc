// JobManager: the ticker (Note [Tick actions] in job_tick.h) and the persistence writers. Each
// tick handles the launcher's exit reports, then, job by job under the job's own lock, moves the
// job's state on (rendezvous deadlines, expired long polls, checkpoint timeouts, the hang scan)
// and asks reconcileTick what the job needs; the launcher actions are carried out outside the
// lock, and a due batch goes to a persistence writer.
//
// Note [Persistence off the ticker]
// A job's store writes (its record, events, checkpoint rows, flight records) run on one of
// `persistWriters` writer threads, never on the ticker: a job slow in the store (a stalled disk,
// a big batch, a lock held by another process) delays its own writes and holds one writer, not
// every job's tick, heartbeat answer or API call. A job is queued at most once (Job::
// persistQueued, set by the tick that queues it, cleared when its write ended), so one writer
// at a time writes it, in order (Note [Persistence order] in job.h). What was acknowledged is as
// durable as before: a submission and a scale are stored before they answer (not through the
// writers); events and checkpoint rows are written within a tick or two as before, and a call
// that reads them from the store (events, checkpoints) writes the job's pending batch first.
// stop() lets the writers finish what is queued, then writes every job's pending batch itself.
#include <algorithm>
#include <csignal>
#include <deque>

#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/lifecycle/job_tick.h"

namespace ddp::controller {

void JobManager::tickLoop() {
  while (!stopping_) {
    tickOnce();
    std::unique_lock<std::mutex> lock(tickMu_);
    tickCv_.wait_for(lock, options_.tick, [this] { return stopping_.load() || exitsPending_; });
    exitsPending_ = false;
  }
}

void JobManager::tickOnce() {
  std::deque<WorkerExit> exits;
  {
    std::lock_guard<std::mutex> lock(exitsMu_);
    exits.swap(exits_);
  }
  for (const WorkerExit& e : exits) {
    if (LockedJob job = lockJob(e.jobName)) job->handleExit(e);
  }
  const TimePoint now = clock_.now();
  const bool scan = now - lastHeartbeatScan_ >= options_.timings.hangScanEvery;
  if (scan) lastHeartbeatScan_ = now;
  const bool periodic = now - lastPersist_ >= options_.persistEvery;
  if (periodic) lastPersist_ = now;
  // One job at a time, each under its own lock (Note [Per-job locking] in job.h); the actions
  // run with no lock held.
  for (const auto& job : snapshot()) {
    JobTickActions a;
    std::string name;
    {
      std::lock_guard<std::mutex> lock(job->mu);
      if (job->removed) continue;
      name = job->record.name;
      job->advance(now, scan);
      const bool jobPeriodic = periodic || job->periodicOwed;
      a = reconcileTick(job->tickFacts(now, jobPeriodic));
      job->periodicOwed = jobPeriodic && !a.persist && job->persistQueued;
      job->recordTick(a, now);
      if (a.drop) unregister(*job);  // its last batch was written (by an earlier tick's writer)
    }
    if (!a.empty()) carryOut(job, name, a);
    if (a.persist) queueWrite(job);
  }
}

void JobManager::reconcileNow(const std::shared_ptr<Job>& job) {
  JobTickActions a;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->removed) return;
    job->lifecycle.launchHeld = false;
    name = job->record.name;
    const TimePoint now = clock_.now();
    a = reconcileTick(job->tickFacts(now, false));
    job->recordTick(a, now);
    if (a.drop) unregister(*job);
  }
  if (!a.empty()) carryOut(job, name, a);
  if (a.persist) queueWrite(job);
}

void JobManager::carryOut(const std::shared_ptr<Job>& job, const std::string& name, const JobTickActions& a) {
  if (a.launch) launch(job);
  if (a.stopJob) (void)launcher_.stopJob(name, options_.timings.killGrace);
  for (const auto& id : a.killRetired) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& id : a.killUnresponsive) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& id : a.replace) replaceCulprit(name, id);
}

void JobManager::replaceCulprit(const std::string& name, const std::string& id) {
  Status st = launcher_.replaceWorker(name, id);
  if (st.isOk()) return;
  if (LockedJob job = lockJob(name)) job->replacementFailed(id, st);
}

void JobManager::queueWrite(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(writeMu_);
    writeQueue_.push_back(std::move(job));
  }
  writeCv_.notify_one();
}

void JobManager::writerLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(writeMu_);
      writeCv_.wait(lock, [this] { return writersStop_ || !writeQueue_.empty(); });
      if (writeQueue_.empty()) return;  // stopping, and nothing left
      job = std::move(writeQueue_.front());
      writeQueue_.pop_front();
    }
    persistJob(*job, true);
    std::lock_guard<std::mutex> lock(job->mu);
    job->persistQueued = false;  // the next tick may queue it again
  }
}

void JobManager::stopWriters() {
  {
    std::lock_guard<std::mutex> lock(writeMu_);
    writersStop_ = true;
  }
  writeCv_.notify_all();
  for (auto& t : writers_) t.join();
  writers_.clear();
}

bool JobManager::persistJob(Job& job, bool periodic) {
  // Note [Persistence order] (job.h): the batch is taken and written under the job's persistMu.
  std::lock_guard<std::mutex> inOrder(job.persistMu);
  std::optional<std::pair<JobRecord, Outbox::Batch>> batch;
  {
    std::lock_guard<std::mutex> lock(job.mu);
    batch = job.takeBatch(periodic);
  }
  if (!batch) return false;
  writeBatch(batch->first, batch->second);
  return true;
}

void JobManager::writeBatch(JobRecord& record, const Outbox::Batch& batch) {
  // Ranked workers first, by rank (sorted here, outside the lock).
  std::sort(record.workers.begin(), record.workers.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? (a.rank < 0 ? false : b.rank < 0 ? true : a.rank < b.rank) : a.id < b.id;
  });
  Status st = store_.update(record);
  for (const auto& e : batch.events) st = st.isOk() ? store_.appendEvent(record.name, e) : st;
  for (const auto& c : batch.checkpoints) st = st.isOk() ? store_.addCheckpoint(record.name, c) : st;
  if (batch.catalog && st.isOk()) st = store_.retainCheckpoints(record.name, *batch.catalog);
  for (const auto& [timeMs, doc] : batch.flightRecords) {
    st = st.isOk() ? store_.putFlightRecord(record.name, timeMs, doc) : st;
  }
  if (!st.isOk() && st.code() != StatusCode::kNotFound) {
    DDP_LOG(Error) << "job " << record.name << ": could not write its record: " << st.toString();
  }
}

}  // namespace ddp::controller
