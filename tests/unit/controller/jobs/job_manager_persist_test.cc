// The JobManager writes its pending state (record, events, checkpoint rows, the catalog) to the
// store outside its lock, from two threads: the ticker and any API call that reads the store
// (events, checkpoints). Those writes must land in the order they were taken: a batch taken
// later and written first was overwritten by the older one (a CI run saw the final checkpoint's
// catalog row deleted by the previous commit's retention list).
// What is faked: the workers (the test calls reportCommit as rank 0 does), the launcher
// (FakeLauncher) and the clock (FakeClock). The store is a real SQLite file behind a decorator
// that can hold one retainCheckpoints call on a latch, so the interleaving is forced, not hoped
// for.
// Thread model: the test's thread, the JobManager's ticker, one reader thread started by the
// test; the latch is guarded by its mutex.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
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

// Forwards every call to `inner`; a retainCheckpoints whose largest step is `holdAt` waits
// (at most 5 s) until release().
class LatchedStore final : public JobStore {
 public:
  LatchedStore(JobStore& inner, int64_t holdAt) : inner_(inner), holdAt_(holdAt) {}

  Status create(const JobRecord& job) override { return inner_.create(job); }
  Result<JobRecord> get(const std::string& name) override { return inner_.get(name); }
  Result<std::vector<JobRecord>> list() override { return inner_.list(); }
  Status update(const JobRecord& job) override { return inner_.update(job); }
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
    if (!steps.empty() && steps.back() == holdAt_) {
      std::unique_lock<std::mutex> lock(mu_);
      held_ = true;
      cv_.notify_all();
      cv_.wait_for(lock, 5s, [this] { return released_; });
    }
    return inner_.retainCheckpoints(name, steps);
  }
  Status putFlightRecord(const std::string& name, int64_t timeMs, const std::string& doc) override {
    return inner_.putFlightRecord(name, timeMs, doc);
  }
  Result<std::vector<std::string>> flightRecords(const std::string& name) override {
    return inner_.flightRecords(name);
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
  const int64_t holdAt_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;      // guarded by mu_
  bool released_ = false;  // guarded by mu_
};

CommitReport committed(int64_t step, std::vector<int64_t> onDisk) {
  CommitReport r;
  r.step = step;
  r.ok = true;
  r.bytes = 100;
  r.path = "/ckpt/step-" + std::to_string(step);
  r.onDisk = std::move(onDisk);
  return r;
}

TEST(JobManagerPersistTest, ALaterBatchIsNeverOverwrittenByAnEarlierOne) {
  testing::TempDir dir("job_manager_persist_test");
  auto sqlite = SqliteJobStore::open(dir.path() + "/jobs.db");
  ASSERT_TRUE(sqlite.isOk()) << sqlite.status();
  LatchedStore store(**sqlite, /*holdAt=*/100);
  FakeClock clock;
  ControllerMetrics metrics;
  FakeLauncher launcher;
  JobManagerOptions o;
  o.tick = 2ms;
  o.persistEvery = 10ms;
  o.metrics = &metrics;
  JobManager jobs(o, store, launcher, clock);
  ASSERT_TRUE(jobs.start().isOk());
  struct Stop {
    JobManager& jobs;
    LatchedStore& store;
    ~Stop() {
      store.release();
      jobs.stop();
    }
  } stop{jobs, store};
  auto spec = parseJobSpec(
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: j}\nspec:\n  workers: {count: 1}\n"
      "  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 1000\n");
  ASSERT_TRUE(spec.isOk()) << spec.status();
  ASSERT_TRUE(jobs.submit(*spec).isOk());

  // Step 100's commit: the ticker takes it and stops inside its retention write.
  ASSERT_TRUE(jobs.reportCommit("j", 1, committed(100, {100})).isOk());
  ASSERT_TRUE(store.waitHeld()) << "the ticker never wrote step 100's catalog";
  // Step 120's commit, then a reader that flushes pending writes before it reads.
  ASSERT_TRUE(jobs.reportCommit("j", 1, committed(120, {100, 120})).isOk());
  auto reader = std::async(std::launch::async, [&] { return jobs.checkpoints("j"); });
  // Without ordering, the reader writes step 120 now and the held batch then retains {100}.
  const bool readerWaited = reader.wait_for(200ms) == std::future_status::timeout;
  store.release();
  auto read = reader.get();
  ASSERT_TRUE(read.isOk()) << read.status();
  EXPECT_TRUE(readerWaited) << "the reader wrote its batch before the earlier one finished";
  auto rows = (*sqlite)->checkpoints("j");
  ASSERT_TRUE(rows.isOk()) << rows.status();
  std::vector<int64_t> steps;
  for (const auto& r : *rows) steps.push_back(r.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{100, 120}));
}

}  // namespace
}  // namespace ddp::controller
