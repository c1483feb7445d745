// Per-job locking (Note [One object per job] in controller/jobs/job.h) and persistence off the
// ticker (Note [Persistence off the ticker] in job_ticker.cc): while one job's persistence is
// stuck in the store, another job's ticks, heartbeats and API calls still answer.
// What is faked: the workers (the test registers and heartbeats for them), the launcher
// (FakeLauncher) and the clock (FakeClock). The store is a real SQLite file behind a decorator
// that holds every record update of job "a" on a latch once armed, so the stall is forced, not
// hoped for: no sleep decides the outcome.
// Thread model: the test's thread, the JobManager's ticker and persistence writers (one blocks in
// the latch), and one thread per timed call; the latch is guarded by its mutex.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "common/jobspec/job_spec.h"
#include "controller/jobs/job_manager.h"
#include "controller/metrics/controller_metrics.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/unit/controller/fake_launcher.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

using namespace std::chrono_literals;

// Forwards every call to `inner`; once armed, update() of job `held` waits (at most 10 s) until
// release().
class LatchedStore final : public JobStore {
 public:
  LatchedStore(JobStore& inner, std::string held) : inner_(inner), heldJob_(std::move(held)) {}

  Status create(const JobRecord& job) override { return inner_.create(job); }
  Result<JobRecord> get(const std::string& name) override { return inner_.get(name); }
  Result<std::vector<JobRecord>> list() override { return inner_.list(); }
  Status update(const JobRecord& job) override {
    if (job.name == heldJob_) {
      std::unique_lock<std::mutex> lock(mu_);
      if (armed_ && !released_) {
        held_ = true;
        cv_.notify_all();
        cv_.wait_for(lock, 10s, [this] { return released_; });
      }
    }
    return inner_.update(job);
  }
  Status updateSpec(const std::string& name, const std::string& specYaml) override {
    return inner_.updateSpec(name, specYaml);
  }
  Status remove(const std::string& name) override { return inner_.remove(name); }
  Status appendEvent(const std::string& name, const JobEvent& event) override { return inner_.appendEvent(name, event); }
  Result<std::vector<JobEvent>> events(const std::string& name) override { return inner_.events(name); }
  Status addCheckpoint(const std::string& name, const CheckpointRecord& c) override {
    return inner_.addCheckpoint(name, c);
  }
  Result<std::vector<CheckpointRecord>> checkpoints(const std::string& name) override {
    return inner_.checkpoints(name);
  }
  Status retainCheckpoints(const std::string& name, const std::vector<int64_t>& steps) override {
    return inner_.retainCheckpoints(name, steps);
  }
  Status putFlightRecord(const std::string& name, int64_t timeMs, const std::string& doc) override {
    return inner_.putFlightRecord(name, timeMs, doc);
  }
  Result<std::vector<std::string>> flightRecords(const std::string& name) override {
    return inner_.flightRecords(name);
  }

  void arm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  bool waitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 5s, [this] { return held_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  JobStore& inner_;
  const std::string heldJob_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;     // guarded by mu_
  bool held_ = false;      // guarded by mu_
  bool released_ = false;  // guarded by mu_
};

JobSpec oneWorker(const std::string& name) {
  auto spec = parseJobSpec("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: " + name +
                           "}\nspec:\n  workers: {count: 1}\n  model: {type: mlp, hidden: [8]}\n"
                           "  data: {dataset: synthetic, batchSize: 8}\n  steps: 1000\n"
                           "  checkpoint: {dir: /tmp/ckpt, everySteps: 100}\n");
  EXPECT_TRUE(spec.isOk()) << spec.status();
  return *spec;
}

// Runs `call` on its own thread: true when it returned within `limit`. A call still blocked is
// left to finish once the latch is released (the future's destructor waits for it).
bool answersWithin(std::chrono::milliseconds limit, std::function<bool()> call, std::vector<std::future<bool>>* late) {
  auto f = std::async(std::launch::async, std::move(call));
  if (f.wait_for(limit) == std::future_status::timeout) {
    late->push_back(std::move(f));
    return false;
  }
  return f.get();
}

// Jobs "a" and "b", one worker each, both Running in generation 1.
void runTwoJobs(JobManager& jobs, FakeClock& clock) {
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(jobs.submit(oneWorker(name)).isOk());
    RegisterRequest r;
    r.workerId = std::string(name) + "-w0";
    r.pid = 100;
    Fenced fenced;
    ASSERT_TRUE(jobs.registerWorker(name, r, &fenced).isOk());
  }
  clock.advance(std::chrono::seconds(1));  // past the last call: both generations form
  const auto until = std::chrono::steady_clock::now() + 5s;
  while ((jobs.get("a")->phase != JobPhase::kRunning || jobs.get("b")->phase != JobPhase::kRunning) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(jobs.get("a")->phase, JobPhase::kRunning);
  ASSERT_EQ(jobs.get("b")->phase, JobPhase::kRunning);
}

// Rank 0's heartbeat of `job` at step 7 of generation 1.
Result<Command> heartbeat(JobManager& jobs, const std::string& job) {
  Heartbeat hb;
  hb.workerId = job + "-w0";
  hb.rank = 0;
  hb.step = 7;
  hb.totalSteps = 1000;
  Fenced fenced;
  return jobs.heartbeat(job, 1, hb, &fenced);
}

TEST(JobManagerLockingTest, AJobStuckInTheStoreDoesNotHoldUpAnother) {
  testing::TempDir dir("job_manager_locking_test");
  auto sqlite = SqliteJobStore::open(dir.path() + "/jobs.db");
  ASSERT_TRUE(sqlite.isOk()) << sqlite.status();
  LatchedStore store(**sqlite, "a");
  FakeClock clock;
  ControllerMetrics metrics;
  FakeLauncher launcher;
  JobManagerOptions o;
  o.tick = 2ms;
  o.persistEvery = 10ms;
  o.metrics = &metrics;
  JobManager jobs(o, store, launcher, clock);
  ASSERT_TRUE(jobs.start().isOk());
  std::vector<std::future<bool>> late;
  struct Stop {
    JobManager& jobs;
    LatchedStore& store;
    std::vector<std::future<bool>>& late;
    ~Stop() {
      store.release();
      late.clear();
      jobs.stop();
    }
  } stop{jobs, store, late};

  ASSERT_NO_FATAL_FAILURE(runTwoJobs(jobs, clock));

  // Job a's next write stops inside the store (an event makes one due at the next tick).
  store.arm();
  ASSERT_TRUE(jobs.requestCheckpoint("a").isOk());
  ASSERT_TRUE(store.waitHeld()) << "the ticker never wrote job a's record";

  auto beat = [&jobs](const std::string& job) { return heartbeat(jobs, job).isOk(); };
  EXPECT_TRUE(answersWithin(1000ms, [&] { return beat("b"); }, &late)) << "job b's heartbeat";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return jobs.get("b").isOk(); }, &late)) << "GET job b";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return jobs.events("b").isOk(); }, &late)) << "job b's events";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return jobs.checkpoints("b").isOk(); }, &late)) << "job b's checkpoints";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return jobs.requestCheckpoint("b").isOk(); }, &late))
      << "a checkpoint request for job b";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return jobs.list().isOk(); }, &late)) << "the job list";
  EXPECT_TRUE(answersWithin(1000ms, [&] { return beat("a"); }, &late))
      << "even job a's own heartbeat: its state is not locked while it is written";

  // Released, job a's write completes and its event reaches the store.
  store.release();
  auto events = jobs.events("a");
  ASSERT_TRUE(events.isOk()) << events.status();
  bool requested = false;
  for (const auto& e : *events) requested = requested || e.reason == "CheckpointRequested";
  EXPECT_TRUE(requested);
}

}  // namespace
}  // namespace ddp::controller

namespace ddp::controller {
namespace {

// Note [Persistence off the ticker] (job_ticker.cc): while job a's write is stuck in the store,
// the ticker still carries out job b's decisions (its stop after fail) and b's heartbeat is
// answered with it.
TEST(JobManagerLockingTest, AJobStuckInTheStoreDoesNotDelayAnothersTick) {
  testing::TempDir dir("job_manager_locking_tick_test");
  auto sqlite = SqliteJobStore::open(dir.path() + "/jobs.db");
  ASSERT_TRUE(sqlite.isOk()) << sqlite.status();
  LatchedStore store(**sqlite, "a");
  FakeClock clock;
  FakeLauncher launcher;
  JobManagerOptions o;
  o.tick = 2ms;
  o.persistEvery = 10ms;
  JobManager jobs(o, store, launcher, clock);
  ASSERT_TRUE(jobs.start().isOk());
  std::vector<std::future<bool>> late;
  struct Stop {
    JobManager& jobs;
    LatchedStore& store;
    std::vector<std::future<bool>>& late;
    ~Stop() {
      store.release();
      late.clear();
      jobs.stop();
    }
  } stop{jobs, store, late};
  ASSERT_NO_FATAL_FAILURE(runTwoJobs(jobs, clock));

  store.arm();
  ASSERT_TRUE(jobs.requestCheckpoint("a").isOk());
  ASSERT_TRUE(store.waitHeld()) << "job a's record was never written";
  ASSERT_EQ(launcher.stops(), 0);

  // Job b fails: its next tick stops its workers (reconcileTick's stopJob, Note [Tick actions]).
  ASSERT_TRUE(jobs.fail("b", "TestFailure", "failed by the test").isOk());
  const auto until = std::chrono::steady_clock::now() + 1s;
  while (launcher.stops() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(launcher.stops(), 1) << "job b's tick did not stop its workers within 1 s";
  EXPECT_TRUE(answersWithin(1000ms, [&] {
    auto c = heartbeat(jobs, "b");
    return c.isOk() && c->type == CommandType::kStop;
  }, &late)) << "job b's heartbeat is answered with stop";

  // Released, job a's held write completes and its event reaches the store.
  store.release();
  auto events = jobs.events("a");
  ASSERT_TRUE(events.isOk()) << events.status();
  bool requested = false;
  for (const auto& e : *events) requested = requested || e.reason == "CheckpointRequested";
  EXPECT_TRUE(requested);
}

}  // namespace
}  // namespace ddp::controller
