#pragma once
// JobStore conformance: one set of checks every JobStore implementation must pass (the
// contract in controller/store/job_store.h). Each implementation's test file instantiates them
// with DDP_JOB_STORE_CONFORMANCE_TESTS(SuiteName, factory), where `factory` makes a fresh,
// empty store. Header-only: controller tests link only ddp_controller and gtest.
// Thread model: the checks start and join their own threads (checkConcurrentUse).

#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "controller/store/job_store.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller::conformance {

// A fresh, empty store (and whatever it needs, e.g. a temporary directory).
class JobStoreUnderTest {
 public:
  virtual ~JobStoreUnderTest() = default;
  virtual JobStore& store() = 0;
};
using JobStoreFactory = std::function<std::unique_ptr<JobStoreUnderTest>()>;

using testing::fullJob;

inline void checkCreateGetRoundTripsEveryField(JobStoreUnderTest& s) {
  JobRecord job = fullJob("mnist");
  ASSERT_TRUE(s.store().create(job).isOk());
  Result<JobRecord> got = s.store().get("mnist");
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_EQ(*got, job);
  // Defaults round-trip too (no testAccuracy, no conditions or workers).
  JobRecord bare;
  bare.name = "bare";
  ASSERT_TRUE(s.store().create(bare).isOk());
  ASSERT_TRUE(s.store().get("bare").isOk());
  EXPECT_EQ(*s.store().get("bare"), bare);
}

inline void checkListOldestFirst(JobStoreUnderTest& s) {
  Result<std::vector<JobRecord>> empty = s.store().list();
  ASSERT_TRUE(empty.isOk()) << empty.status();
  EXPECT_TRUE(empty->empty());
  // createdMs decides; equal createdMs keep creation order.
  const std::vector<std::pair<std::string, int64_t>> jobs = {
      {"c", 300}, {"a", 100}, {"b2", 200}, {"b1", 200}};
  for (const auto& [name, created] : jobs) {
    JobRecord job = fullJob(name);
    job.createdMs = created;
    ASSERT_TRUE(s.store().create(job).isOk());
  }
  Result<std::vector<JobRecord>> list = s.store().list();
  ASSERT_TRUE(list.isOk()) << list.status();
  std::vector<std::string> names;
  for (const JobRecord& j : *list) names.push_back(j.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b2", "b1", "c"}));
  EXPECT_EQ((*list)[0], [] { JobRecord j = fullJob("a"); j.createdMs = 100; return j; }());
}

inline void checkUpdateChangesStatusFieldsOnly(JobStoreUnderTest& s) {
  JobRecord job = fullJob("j");
  ASSERT_TRUE(s.store().create(job).isOk());
  JobRecord next = job;
  next.phase = JobPhase::kSucceeded;
  next.completionMs = job.completionMs + 5;
  next.startMs = job.startMs + 1;
  next.createdMs = job.createdMs + 2;
  next.setCondition(kConditionSucceeded, true, "AllWorkersSucceeded", "done", 42);
  next.conditions[0].message = "changed";
  next.generation = job.generation + 1;
  next.restarts = job.restarts + 1;
  next.progress.step = 1000;
  next.progress.testAccuracy.reset();
  next.workers.pop_back();
  next.workers[0].state = "Succeeded";
  // Never changed by update().
  next.specYaml = "name: other\n";
  next.workerToken = "other-token";
  ASSERT_TRUE(s.store().update(next).isOk());
  Result<JobRecord> got = s.store().get("j");
  ASSERT_TRUE(got.isOk()) << got.status();
  JobRecord want = next;
  want.specYaml = job.specYaml;
  want.workerToken = job.workerToken;
  EXPECT_EQ(*got, want);
}

inline void checkUpdateOfReplacedJobFails(JobStoreUnderTest& s) {
  JobRecord old = fullJob("j", 1);
  ASSERT_TRUE(s.store().create(old).isOk());
  ASSERT_TRUE(s.store().remove("j").isOk());
  JobRecord again = fullJob("j", 2);
  ASSERT_TRUE(s.store().create(again).isOk());
  old.phase = JobPhase::kFailed;
  Status st = s.store().update(old);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("'j'"), std::string::npos) << st;
  EXPECT_EQ(*s.store().get("j"), again);
}

inline void checkDuplicateNameAlreadyExists(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("dup", 1)).isOk());
  Status st = s.store().create(fullJob("dup", 2));
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st;
  EXPECT_NE(st.message().find("dup"), std::string::npos) << st;
  EXPECT_EQ(*s.store().get("dup"), fullJob("dup", 1));  // the first one stays
  EXPECT_EQ(s.store().list()->size(), 1u);
}

inline void checkMissingJobNotFound(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("present")).isOk());
  auto expectNotFound = [](const Status& st, const char* what) {
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << what << ": " << st;
    EXPECT_NE(st.message().find("ghost"), std::string::npos) << what << ": " << st;
  };
  expectNotFound(s.store().get("ghost").status(), "get");
  expectNotFound(s.store().update(fullJob("ghost")), "update");
  expectNotFound(s.store().remove("ghost"), "remove");
  expectNotFound(s.store().appendEvent("ghost", JobEvent{}), "appendEvent");
  expectNotFound(s.store().events("ghost").status(), "events");
  expectNotFound(s.store().addCheckpoint("ghost", CheckpointRecord{}), "addCheckpoint");
  expectNotFound(s.store().checkpoints("ghost").status(), "checkpoints");
  expectNotFound(s.store().retainCheckpoints("ghost", {}), "retainCheckpoints");
}

inline void checkEmptyNameInvalid(JobStoreUnderTest& s) {
  EXPECT_EQ(s.store().create(JobRecord{}).code(), StatusCode::kInvalidArgument);
}

inline void checkRemoveTakesEventsAndCheckpoints(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("j", 1)).isOk());
  ASSERT_TRUE(s.store().create(fullJob("other")).isOk());
  for (const char* job : {"j", "other"}) {
    ASSERT_TRUE(s.store().appendEvent(job, JobEvent{1, kEventNormal, "Created", "x"}).isOk());
    ASSERT_TRUE(s.store().addCheckpoint(job, CheckpointRecord{10, 2, 3, 4, "/ckpt/10"}).isOk());
  }
  ASSERT_TRUE(s.store().remove("j").isOk());
  EXPECT_EQ(s.store().get("j").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.store().remove("j").code(), StatusCode::kNotFound);
  // A new job under the same name starts with no events or checkpoints.
  ASSERT_TRUE(s.store().create(fullJob("j", 2)).isOk());
  EXPECT_TRUE(s.store().events("j")->empty());
  EXPECT_TRUE(s.store().checkpoints("j")->empty());
  EXPECT_EQ(s.store().events("other")->size(), 1u);
  EXPECT_EQ(s.store().checkpoints("other")->size(), 1u);
}

inline void checkEventsOldestFirstAndCapped(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("j")).isOk());
  ASSERT_TRUE(s.store().create(fullJob("k")).isOk());
  ASSERT_TRUE(s.store().appendEvent("k", JobEvent{7, kEventWarning, "Other", "k's"}).isOk());
  EXPECT_TRUE(s.store().events("j")->empty());
  const int total = kMaxEventsPerJob + 5;
  for (int i = 0; i < total; ++i) {
    // Times deliberately not monotonic: order is append order.
    JobEvent e{int64_t{1000} - i % 3, i % 2 ? kEventWarning : kEventNormal, "Reason" + std::to_string(i),
               "event " + std::to_string(i)};
    ASSERT_TRUE(s.store().appendEvent("j", e).isOk());
    if (i == 2) {
      Result<std::vector<JobEvent>> first = s.store().events("j");
      ASSERT_TRUE(first.isOk()) << first.status();
      ASSERT_EQ(first->size(), 3u);
      EXPECT_EQ((*first)[0], (JobEvent{1000, kEventNormal, "Reason0", "event 0"}));
      EXPECT_EQ((*first)[1], (JobEvent{999, kEventWarning, "Reason1", "event 1"}));
    }
  }
  Result<std::vector<JobEvent>> events = s.store().events("j");
  ASSERT_TRUE(events.isOk()) << events.status();
  ASSERT_EQ(events->size(), static_cast<size_t>(kMaxEventsPerJob));
  EXPECT_EQ(events->front().message, "event 5");
  EXPECT_EQ(events->back().message, "event " + std::to_string(total - 1));
  for (size_t i = 1; i < events->size(); ++i) {
    ASSERT_EQ((*events)[i].message, "event " + std::to_string(i + 5));
  }
  EXPECT_EQ(*s.store().events("k"), (std::vector<JobEvent>{{7, kEventWarning, "Other", "k's"}}));
}

// The catalog follows the disk: records of steps retention removed go, the others stay, no
// record is made up for a step on disk that was never recorded, another job's are untouched.
inline void checkRetainCheckpointsKeepsOnlyTheGivenSteps(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("j")).isOk());
  ASSERT_TRUE(s.store().create(fullJob("k")).isOk());
  for (int64_t step : {10, 20, 30, 40}) {
    ASSERT_TRUE(s.store().addCheckpoint("j", CheckpointRecord{step, step, step, 2, "/c/" + std::to_string(step)}).isOk());
    ASSERT_TRUE(s.store().addCheckpoint("k", CheckpointRecord{step, step, step, 2, "/k/" + std::to_string(step)}).isOk());
  }
  ASSERT_TRUE(s.store().retainCheckpoints("j", {30, 40, 50}).isOk());
  Result<std::vector<CheckpointRecord>> got = s.store().checkpoints("j");
  ASSERT_TRUE(got.isOk()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], (CheckpointRecord{30, 30, 30, 2, "/c/30"}));
  EXPECT_EQ((*got)[1].step, 40);
  EXPECT_EQ(s.store().checkpoints("k")->size(), 4u);
  ASSERT_TRUE(s.store().retainCheckpoints("j", {}).isOk());
  EXPECT_TRUE(s.store().checkpoints("j")->empty());
}

inline void checkCheckpointsByStepAndReplaced(JobStoreUnderTest& s) {
  ASSERT_TRUE(s.store().create(fullJob("j")).isOk());
  EXPECT_TRUE(s.store().checkpoints("j")->empty());
  for (int64_t step : {300, 100, 200}) {
    CheckpointRecord c{step, 1700000000000 + step, step * 1000, 4, "/data/j/step-" + std::to_string(step)};
    ASSERT_TRUE(s.store().addCheckpoint("j", c).isOk());
  }
  // The same step again (e.g. after a restart on another world size) replaces the record.
  CheckpointRecord again{200, 5, 6, 2, "/data/j/step-200-again"};
  ASSERT_TRUE(s.store().addCheckpoint("j", again).isOk());
  Result<std::vector<CheckpointRecord>> got = s.store().checkpoints("j");
  ASSERT_TRUE(got.isOk()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0], (CheckpointRecord{100, 1700000000100, 100000, 4, "/data/j/step-100"}));
  EXPECT_EQ((*got)[1], again);
  EXPECT_EQ((*got)[2].step, 300);
}

inline void checkNamesAndTextAreData(JobStoreUnderTest& s) {
  const std::vector<std::string> names = {"x'); DROP TABLE jobs; --", "naïve ✓", "a\"b\\c", "%_*"};
  for (const std::string& name : names) {
    JobRecord job = fullJob(name);
    job.specYaml += "# " + name + "\n";
    job.conditions[0].message = "\"}] " + name;
    ASSERT_TRUE(s.store().create(job).isOk()) << name;
    ASSERT_TRUE(s.store().appendEvent(name, JobEvent{1, kEventNormal, "R", name}).isOk());
    EXPECT_EQ(*s.store().get(name), job) << name;
    EXPECT_EQ(s.store().events(name)->at(0).message, name);
  }
  EXPECT_EQ(s.store().get("%").status().code(), StatusCode::kNotFound);  // no pattern matching
  EXPECT_EQ(s.store().list()->size(), names.size());
}

inline void checkNonFiniteProgress(JobStoreUnderTest& s) {
  JobRecord job = fullJob("diverged");
  job.progress.loss = std::numeric_limits<double>::quiet_NaN();
  job.progress.samplesPerSecond = std::numeric_limits<double>::infinity();
  job.progress.etaSeconds = -std::numeric_limits<double>::infinity();
  job.progress.testAccuracy = 0.1;
  ASSERT_TRUE(s.store().create(job).isOk());
  Result<JobRecord> got = s.store().get("diverged");
  ASSERT_TRUE(got.isOk()) << got.status();
  EXPECT_TRUE(std::isnan(got->progress.loss));
  EXPECT_EQ(got->progress.samplesPerSecond, std::numeric_limits<double>::infinity());
  EXPECT_EQ(got->progress.etaSeconds, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(*got, job);
}

// 4 threads, each creating, updating, reading and logging its own jobs while listing all.
inline void checkConcurrentUse(JobStoreUnderTest& s) {
  constexpr int kThreads = 4;
  constexpr int kJobsPerThread = 15;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&s, &failures, t] {
      auto fail = [&failures](const Status& st) {
        if (!st.isOk()) {
          ++failures;
          ADD_FAILURE() << st;
        }
      };
      for (int i = 0; i < kJobsPerThread; ++i) {
        std::string name = "t" + std::to_string(t) + "-j" + std::to_string(i);
        JobRecord job = fullJob(name, t * 100 + i);
        fail(s.store().create(job));
        fail(s.store().appendEvent(name, JobEvent{i, kEventNormal, "Created", name}));
        job.phase = JobPhase::kRunning;
        job.progress.step = i;
        fail(s.store().update(job));
        fail(s.store().appendEvent(name, JobEvent{i, kEventNormal, "Started", name}));
        fail(s.store().addCheckpoint(name, CheckpointRecord{i, i, i, 4, name}));
        Result<JobRecord> got = s.store().get(name);
        fail(got.status());
        if (got.isOk() && !(*got == job)) ADD_FAILURE() << "mismatch for " << name;
        if (i % 5 == 0) fail(s.store().list().status());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  Result<std::vector<JobRecord>> all = s.store().list();
  ASSERT_TRUE(all.isOk()) << all.status();
  ASSERT_EQ(all->size(), static_cast<size_t>(kThreads * kJobsPerThread));
  for (const JobRecord& job : *all) {
    EXPECT_EQ(job.phase, JobPhase::kRunning) << job.name;
    Result<std::vector<JobEvent>> events = s.store().events(job.name);
    ASSERT_TRUE(events.isOk()) << events.status();
    ASSERT_EQ(events->size(), 2u) << job.name;
    EXPECT_EQ((*events)[0].reason, "Created");
    EXPECT_EQ((*events)[1].reason, "Started");
    EXPECT_EQ(s.store().checkpoints(job.name)->size(), 1u);
  }
}

}  // namespace ddp::controller::conformance

#define DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, Name)                     \
  TEST(Suite, Name) {                                                              \
    auto _sut = (factory)();                                                       \
    ASSERT_NE(_sut, nullptr);                                                      \
    ::ddp::controller::conformance::check##Name(*_sut);                            \
  }

// Defines one TEST per conformance check in test suite `Suite`.
#define DDP_JOB_STORE_CONFORMANCE_TESTS(Suite, factory)                                \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, CreateGetRoundTripsEveryField)       \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, ListOldestFirst)                     \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, UpdateChangesStatusFieldsOnly)       \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, UpdateOfReplacedJobFails)            \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, DuplicateNameAlreadyExists)          \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, MissingJobNotFound)                  \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, EmptyNameInvalid)                    \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, RemoveTakesEventsAndCheckpoints)     \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, EventsOldestFirstAndCapped)          \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, CheckpointsByStepAndReplaced)        \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, RetainCheckpointsKeepsOnlyTheGivenSteps) \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, NamesAndTextAreData)                 \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, NonFiniteProgress)                   \
  DDP_JOB_STORE_CONFORMANCE_TEST_(Suite, factory, ConcurrentUse)
