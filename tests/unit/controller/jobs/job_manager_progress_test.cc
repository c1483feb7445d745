// The job's progress from heartbeats, driven through the JobManager's public methods with an
// injected clock and a fake launcher (the test plays the workers): a language model's
// validation loss, tokens/s and MFU reach the job record, the store, the API's job object
// (with perplexity = exp(valLoss)) and the metrics; a job whose workers never send them keeps
// them unknown.
// Time: the FakeClock moves only when a test advances it; the JobManager's ticker thread runs
// every 2 ms of real time and acts on the fake time it reads, so a test advances the clock, then
// waits (bounded, polling) for the effect.
// Thread model: the test's thread, the JobManager's ticker.
#include "controller/jobs/job_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/jobspec/job_spec.h"
#include "controller/api/job_json.h"
#include "controller/metrics/controller_metrics.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/prometheus_text.h"
#include "tests/unit/controller/fake_launcher.h"
#include "tests/unit/controller/job_store_test_util.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

class JobManagerProgressTest : public ::testing::Test {
 protected:
  static constexpr const char* kJob = "j";

  void SetUp() override {
    auto store = SqliteJobStore::open(dir_.path() + "/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    store_ = std::move(*store);
    JobManagerOptions o;
    o.tick = std::chrono::milliseconds(2);
    o.persistEvery = std::chrono::milliseconds(10);
    o.metrics = &metrics_;
    jobs_ = std::make_unique<JobManager>(o, *store_, launcher_, clock_);
    ASSERT_TRUE(jobs_->start().isOk());
  }
  void TearDown() override {
    if (jobs_) jobs_->stop();
  }

  // Two workers registered, generation 1 Running.
  void running() {
    auto spec = parseJobSpec(std::string("apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: ") + kJob +
                             "\nspec:\n  workers: {count: 2}\n  model: {type: mlp, hidden: [8]}\n"
                             "  data: {dataset: synthetic, batchSize: 8}\n  steps: 1000\n"
                             "  timeouts: {heartbeatSeconds: 1, heartbeatMisses: 3, hangSeconds: 5}\n");
    ASSERT_TRUE(spec.isOk()) << spec.status();
    ASSERT_TRUE(jobs_->submit(*spec).isOk());
    for (int i = 0; i < 2; ++i) {
      RegisterRequest r;
      r.workerId = std::string(kJob) + "-w" + std::to_string(i);
      r.host = "127.0.0.1";
      r.pid = 100 + i;
      Fenced fenced;
      std::string incarnation;
      ASSERT_TRUE(jobs_->registerWorker(kJob, r, &fenced, &incarnation).isOk());
    }
    advance(0.3);
    ASSERT_TRUE(waitFor([&] { return record().phase == JobPhase::kRunning; })) << jobPhaseName(record().phase);
  }
  // A heartbeat of `rank` at `step`, with the language-model figures `hb` carries.
  void beat(int rank, int64_t step, Heartbeat hb = {}) {
    hb.workerId = std::string(kJob) + "-w" + std::to_string(rank);
    hb.rank = rank;
    hb.step = step;
    hb.totalSteps = 1000;
    hb.loss = 3.5;
    hb.samplesPerSecond = 64;
    hb.counters.steps = step;
    Fenced fenced;
    auto c = jobs_->heartbeat(kJob, 1, hb, &fenced);
    ASSERT_TRUE(c.isOk()) << c.status();
  }
  static Heartbeat languageModel(double valLoss, double tokensPerSecond, double mfu) {
    Heartbeat hb;
    hb.valLoss = valLoss;
    hb.tokensPerSecond = tokensPerSecond;
    hb.mfu = mfu;
    return hb;
  }
  void advance(double s) {
    clock_.advance(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
  }
  bool waitFor(const std::function<bool()>& pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return pred();
  }
  JobRecord record() {
    auto r = jobs_->get(kJob);
    return r.isOk() ? *r : JobRecord{};
  }
  JobRecord stored() {
    auto r = store_->get(kJob);
    return r.isOk() ? *r : JobRecord{};
  }
  json apiProgress() { return json::parse(jobJson(record()))["status"]["progress"]; }

  testing::TempDir dir_{"job_manager_progress_test"};
  FakeClock clock_;
  ControllerMetrics metrics_;  // declared before the JobManager that reports to it
  FakeLauncher launcher_;
  std::unique_ptr<SqliteJobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

TEST_F(JobManagerProgressTest, ValidationLossGivesPerplexityInTheApiTheStoreAndTheMetrics) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_NO_FATAL_FAILURE(beat(0, 10, languageModel(2.25, 81920, 0.42)));
  ASSERT_NO_FATAL_FAILURE(beat(1, 10, languageModel(7.0, 1, 0.9)));  // not the job's figures

  const JobRecord r = record();
  EXPECT_EQ(r.progress.valLoss, 2.25);
  EXPECT_EQ(r.progress.tokensPerSecond, 81920);
  EXPECT_EQ(r.progress.mfu, 0.42);
  const json p = apiProgress();
  EXPECT_EQ(p["valLoss"], 2.25);
  ASSERT_TRUE(p["perplexity"].is_number()) << p.dump();
  EXPECT_DOUBLE_EQ(p["perplexity"].get<double>(), std::exp(2.25));
  EXPECT_EQ(p["tokensPerSecond"], 81920);
  EXPECT_EQ(p["mfu"], 0.42);
  EXPECT_TRUE(p["testAccuracy"].is_null());

  // The store has them once the job manager persisted its progress (a restarted controller
  // serves the same object).
  advance(0.1);
  ASSERT_TRUE(waitFor([&] { return stored().progress.valLoss.has_value(); })) << "never persisted";
  const JobRecord s = stored();
  EXPECT_EQ(s.progress.valLoss, 2.25);
  EXPECT_EQ(s.progress.tokensPerSecond, 81920);
  EXPECT_EQ(s.progress.mfu, 0.42);
  EXPECT_DOUBLE_EQ(json::parse(jobJson(s))["status"]["progress"]["perplexity"].get<double>(), std::exp(2.25));

  const test::PromText t = test::PromText::parse(metrics_.scrape({}));
  EXPECT_NEAR(*t.value("ddp_job_val_loss", {{"job", kJob}}), 2.25, 1e-12);
  EXPECT_NEAR(*t.value("ddp_job_perplexity", {{"job", kJob}}), std::exp(2.25), 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_tokens_per_second", {{"job", kJob}}), 81920, 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_mfu", {{"job", kJob}}), 0.42, 1e-12);

  // A heartbeat between validations keeps the last validation loss; the next one replaces it.
  ASSERT_NO_FATAL_FAILURE(beat(0, 20));
  EXPECT_EQ(apiProgress()["valLoss"], 2.25);
  EXPECT_EQ(apiProgress()["step"], 20);
  ASSERT_NO_FATAL_FAILURE(beat(0, 30, languageModel(1.5, 90000, 0.45)));
  EXPECT_DOUBLE_EQ(apiProgress()["perplexity"].get<double>(), std::exp(1.5));
}

// Workers that never send the figures (an MLP, or a worker from before them): unknown
// everywhere, null in the API, as testAccuracy before an evaluation.
TEST_F(JobManagerProgressTest, AJobWithoutTheFiguresKeepsThemUnknown) {
  ASSERT_NO_FATAL_FAILURE(running());
  ASSERT_NO_FATAL_FAILURE(beat(0, 10));
  ASSERT_NO_FATAL_FAILURE(beat(1, 10));
  const JobRecord r = record();
  EXPECT_EQ(r.progress.step, 10);
  EXPECT_FALSE(r.progress.valLoss.has_value());
  EXPECT_FALSE(r.progress.tokensPerSecond.has_value());
  EXPECT_FALSE(r.progress.mfu.has_value());
  const json p = apiProgress();
  for (const char* k : {"valLoss", "perplexity", "tokensPerSecond", "mfu"}) {
    ASSERT_TRUE(p.contains(k)) << k;
    EXPECT_TRUE(p[k].is_null()) << k;
  }
  advance(0.1);
  ASSERT_TRUE(waitFor([&] { return stored().progress.step == 10; }));
  EXPECT_FALSE(stored().progress.valLoss.has_value());
}

}  // namespace
}  // namespace ddp::controller
