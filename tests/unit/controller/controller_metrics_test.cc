// ControllerMetrics (Note [Job series lifetime], Note [Counters from heartbeats] in
// controller/metrics/controller_metrics.h) driven through its sink methods and read back from
// its Prometheus text, with an injected clock (faked: time) for the retention period.
#include "controller/metrics/controller_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/prometheus_text.h"

namespace ddp::controller {
namespace {

using test::PromText;

WorkerFigures figures(double steps, double samples, double stepSeconds, double commBytes) {
  WorkerFigures f;
  f.steps = steps;
  f.step = static_cast<int64_t>(steps);
  f.totalSteps = 100;
  f.samples = samples;
  f.stepSeconds = stepSeconds;
  f.commBytes = commBytes;
  f.commExposedSeconds = stepSeconds / 10;
  return f;
}

TEST(ControllerMetricsTest, EveryFamilyIsPresentWithItsTypeAndLabelsOnceAJobExists) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("a", 2);
  const PromText t = PromText::parse(m.scrape({}));
  for (const auto& f : test::controllerFamilies()) {
    ASSERT_TRUE(t.types.count(f.name)) << f.name << " has no # TYPE line";
    EXPECT_EQ(t.types.at(f.name), f.type) << f.name;
    bool found = false;
    for (const auto& s : t.samples) {
      if (s.name != test::sampleName(f)) continue;
      found = true;
      std::vector<std::string> keys;
      for (const auto& [k, v] : s.labels) keys.push_back(k);
      std::vector<std::string> want = f.labels;
      std::sort(want.begin(), want.end());
      EXPECT_EQ(keys, want) << f.name;
    }
    EXPECT_TRUE(found) << f.name << " has no sample";
  }
  // Created at zero.
  EXPECT_EQ(t.value("ddp_job_steps_total", {{"job", "a"}}), 0);
  EXPECT_EQ(t.value("ddp_jobs_created_total"), 1);
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Pending"}}), 1);
  EXPECT_EQ(t.value("ddp_job_compression_ratio", {{"job", "a"}}), 1);
  EXPECT_EQ(t.count("ddp_hangs_detected_total", "job", "a"), 5u) << "one series per verdict reason";
  EXPECT_EQ(t.value("ddp_controller_info", {{"version", kControllerVersion}}), 1);
}

TEST(ControllerMetricsTest, CountersAddHeartbeatDifferencesAcrossGenerations) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("j", 2);
  // Generation 1: rank 0 reaches 30 steps, rank 1 29; each rank 16 samples a step.
  m.heartbeat("j", "j-w0", 1, 0, figures(10, 160, 1.0, 1000));
  m.heartbeat("j", "j-w1", 1, 1, figures(10, 160, 1.0, 1000));
  m.heartbeat("j", "j-w0", 1, 0, figures(30, 480, 2.0, 3000));
  m.heartbeat("j", "j-w1", 1, 1, figures(29, 464, 1.9, 2900));
  // Generation 2 (after a restart): the trainers count from 0 again; the replacement too.
  m.heartbeat("j", "j-w0", 2, 0, figures(5, 80, 0.5, 500));
  m.heartbeat("j", "j-w1b", 2, 1, figures(5, 80, 0.5, 500));
  m.heartbeat("j", "j-w0", 2, 0, figures(5, 80, 0.5, 500));  // a repeat adds nothing
  const PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_job_steps_total", {{"job", "j"}}), 35) << "rank 0's steps: 30 + 5";
  EXPECT_EQ(t.value("ddp_job_samples_total", {{"job", "j"}}), 480 + 464 + 80 + 80) << "every rank's samples";
  EXPECT_EQ(t.value("ddp_job_comm_bytes_total", {{"job", "j"}}), 3000 + 2900 + 500 + 500);
  EXPECT_DOUBLE_EQ(*t.value("ddp_job_comm_exposed_seconds_total", {{"job", "j"}}), 0.2 + 0.05);
  // Step time: rank 0's 35 steps, 2.5 s in all; 10 steps at 0.1 s, 20 at 0.05 s, 5 at 0.1 s.
  EXPECT_EQ(t.value("ddp_job_step_seconds_count", {{"job", "j"}}), 35);
  EXPECT_DOUBLE_EQ(*t.value("ddp_job_step_seconds_sum", {{"job", "j"}}), 2.5);
  EXPECT_EQ(t.value("ddp_job_step_seconds_bucket", {{"job", "j"}, {"le", "0.05"}}), 20);
  EXPECT_EQ(t.value("ddp_job_step_seconds_bucket", {{"job", "j"}, {"le", "0.1"}}), 35);
  EXPECT_DOUBLE_EQ(*t.value("ddp_job_progress_ratio", {{"job", "j"}}), 0.05);
  // Ranks seen so far have heartbeat-age series.
  EXPECT_EQ(t.count("ddp_worker_heartbeat_age_seconds", "job", "j"), 2u);
}

TEST(ControllerMetricsTest, CompressionRatioIsBytesWithoutCompressionOverBytesSent) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("p", 2);
  WorkerFigures f = figures(10, 160, 1, 0);
  // PowerSGD: 4000 bucket bytes became 400; 600 bytes went uncompressed: 1000 sent of 4600.
  f.commBytes = 1000;
  f.compressionUncompressedBytes = 4000;
  f.compressionSentBytes = 400;
  m.heartbeat("p", "p-w0", 1, 0, f);
  const PromText t = PromText::parse(m.scrape({}));
  EXPECT_DOUBLE_EQ(*t.value("ddp_job_compression_ratio", {{"job", "p"}}), 4.6);
}

// Language-model gauges: rank 0's figures, perplexity = exp(val loss); a heartbeat without them
// (or another rank's) leaves them as they were; a job of another model keeps them at 0.
TEST(ControllerMetricsTest, LanguageModelGaugesFollowRankZero) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("gpt", 2);
  m.jobCreated("mlp", 1);
  WorkerFigures f = figures(10, 160, 1, 0);
  f.valLoss = 2.5;
  f.tokensPerSecond = 40000;
  f.mfu = 0.35;
  m.heartbeat("gpt", "gpt-w0", 1, 0, f);
  WorkerFigures other = f;  // rank 1's figures are not the job's
  other.valLoss = 9;
  other.tokensPerSecond = 1;
  other.mfu = 0.9;
  m.heartbeat("gpt", "gpt-w1", 1, 1, other);
  m.heartbeat("mlp", "mlp-w0", 1, 0, figures(10, 160, 1, 0));
  PromText t = PromText::parse(m.scrape({}));
  EXPECT_NEAR(*t.value("ddp_job_val_loss", {{"job", "gpt"}}), 2.5, 1e-12);
  EXPECT_NEAR(*t.value("ddp_job_perplexity", {{"job", "gpt"}}), std::exp(2.5), 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_tokens_per_second", {{"job", "gpt"}}), 40000, 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_mfu", {{"job", "gpt"}}), 0.35, 1e-12);
  for (const char* family : {"ddp_job_val_loss", "ddp_job_perplexity", "ddp_job_tokens_per_second", "ddp_job_mfu"}) {
    EXPECT_EQ(t.value(family, {{"job", "mlp"}}), 0) << family << ": present, 0 for a job without the figure";
  }

  // A later heartbeat between validations: the throughput moves, the validation figures stay.
  WorkerFigures between = figures(20, 320, 2, 0);
  between.tokensPerSecond = 50000;
  m.heartbeat("gpt", "gpt-w0", 1, 0, between);
  t = PromText::parse(m.scrape({}));
  EXPECT_NEAR(*t.value("ddp_job_val_loss", {{"job", "gpt"}}), 2.5, 1e-12);
  EXPECT_NEAR(*t.value("ddp_job_perplexity", {{"job", "gpt"}}), std::exp(2.5), 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_tokens_per_second", {{"job", "gpt"}}), 50000, 1e-9);
  EXPECT_NEAR(*t.value("ddp_job_mfu", {{"job", "gpt"}}), 0.35, 1e-12);
}

TEST(ControllerMetricsTest, AFinishedJobsSeriesGoAfterTheRetentionPeriod) {
  FakeClock clock;
  MetricsOptions o;
  o.retention = std::chrono::minutes(15);
  ControllerMetrics m(o, clock);
  m.jobCreated("done", 2);
  m.jobPhase("done", JobPhase::kRunning);
  m.heartbeat("done", "done-w0", 1, 0, figures(40, 640, 1, 10));
  m.jobPhase("done", JobPhase::kSucceeded);
  clock.advance(std::chrono::minutes(14));
  PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_job_steps_total", {{"job", "done"}}), 40) << "kept within the retention period";
  clock.advance(std::chrono::minutes(1));
  t = PromText::parse(m.scrape({}));
  EXPECT_FALSE(t.value("ddp_job_steps_total", {{"job", "done"}})) << "removed once the period passed";
  EXPECT_EQ(t.count("ddp_job_workers", "job", "done"), 0u);
  EXPECT_EQ(t.count("ddp_hangs_detected_total", "job", "done"), 0u);
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Succeeded"}}), 1) << "the job is still in the table";
  EXPECT_EQ(t.value("ddp_jobs_succeeded_total"), 1);
  m.jobRemoved("done");
  t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Succeeded"}}), 0);
}

TEST(ControllerMetricsTest, PhasesCountTransitionsNotRestoredJobs) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  // A restarted controller reports its stored jobs: no counter moves, unfinished ones get series.
  m.jobPhase("old", JobPhase::kSucceeded);
  m.jobPhase("live", JobPhase::kRunning);
  m.jobPhase("live", JobPhase::kRestarting);
  m.hangDetected("live", "Unresponsive");
  m.jobPhase("live", JobPhase::kRunning);
  m.recovered("live", 3.5);
  m.jobPhase("live", JobPhase::kFailed);
  m.jobPhase("live", JobPhase::kFailed);  // reported twice: counted once
  const PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_jobs_created_total"), 0);
  EXPECT_EQ(t.value("ddp_jobs_succeeded_total"), 0);
  EXPECT_EQ(t.value("ddp_jobs_failed_total"), 1);
  EXPECT_EQ(t.value("ddp_job_restarts_total", {{"job", "live"}}), 1);
  EXPECT_EQ(t.value("ddp_hangs_detected_total", {{"job", "live"}, {"reason", "Unresponsive"}}), 1);
  EXPECT_EQ(t.value("ddp_hangs_detected_total", {{"job", "live"}, {"reason", "Exited"}}), 0);
  EXPECT_EQ(t.value("ddp_recovery_seconds_sum", {{"job", "live"}}), 3.5);
  EXPECT_EQ(t.count("ddp_job_steps_total", "job", "old"), 0u) << "a job that ended before has no series";
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Succeeded"}}), 1);
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Failed"}}), 1);
}

TEST(ControllerMetricsTest, ScrapeAppliesTheJobManagersGauges) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("g", 2);
  m.rendezvousClosed("g", 1, 2, 0.75);
  PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_job_world_size", {{"job", "g"}}), 2) << "set when the round closed";
  EXPECT_EQ(t.value("ddp_rendezvous_seconds_sum"), 0.75);
  JobGauges g;
  g.job = "g";
  g.worldSize = 3;
  g.generation = 2;
  g.workersByState = {{"Running", 2}, {"Replacing", 1}};
  g.heartbeatAgeSeconds = {0.5, 1.5, 7};
  t = PromText::parse(m.scrape({g}));
  EXPECT_EQ(t.value("ddp_job_world_size", {{"job", "g"}}), 3);
  EXPECT_EQ(t.value("ddp_job_generation", {{"job", "g"}}), 2);
  EXPECT_EQ(t.value("ddp_job_workers", {{"job", "g"}, {"state", "Running"}}), 2);
  EXPECT_EQ(t.value("ddp_job_workers", {{"job", "g"}, {"state", "Replacing"}}), 1);
  EXPECT_EQ(t.value("ddp_job_workers", {{"job", "g"}, {"state", "Failed"}}), 0);
  EXPECT_EQ(t.value("ddp_worker_heartbeat_age_seconds", {{"job", "g"}, {"rank", "2"}}), 7);
  g.heartbeatAgeSeconds = {0.1, 9};  // the world shrank
  t = PromText::parse(m.scrape({g}));
  EXPECT_EQ(t.count("ddp_worker_heartbeat_age_seconds", "job", "g"), 2u);
  // The job ended and its live state is gone: no age stays frozen at its last value, and the
  // series (and so the family) stay until the retention period.
  m.jobPhase("g", JobPhase::kSucceeded);
  t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.count("ddp_worker_heartbeat_age_seconds", "job", "g"), 2u);
  EXPECT_EQ(t.value("ddp_worker_heartbeat_age_seconds", {{"job", "g"}, {"rank", "1"}}), 0);
  EXPECT_EQ(t.value("ddp_job_workers", {{"job", "g"}, {"state", "Running"}}), 0);
}

TEST(ControllerMetricsTest, FaultCountersCountEachFault) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("f", 2);
  m.workerDied("f");
  m.workerDied("f");
  m.communicatorAborted("f");
  m.hangDetected("f", "Unresponsive");
  m.recovered("f", 1.5);
  m.workerDied("unknown-job");  // no series for a job the metrics never saw: ignored
  const PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_worker_deaths_total", {{"job", "f"}}), 2);
  EXPECT_EQ(t.value("ddp_aborts_total", {{"job", "f"}}), 1);
  EXPECT_EQ(t.value("ddp_hangs_detected_total", {{"job", "f"}, {"reason", "Unresponsive"}}), 1);
  EXPECT_EQ(t.value("ddp_hangs_detected_total", {{"job", "f"}, {"reason", "Exited"}}), 0);
  EXPECT_EQ(t.value("ddp_recovery_seconds_sum", {{"job", "f"}}), 1.5);
  EXPECT_EQ(t.value("ddp_recovery_seconds_count", {{"job", "f"}}), 1);
  EXPECT_EQ(t.count("ddp_worker_deaths_total", "job", "unknown-job"), 0u);
}

TEST(ControllerMetricsTest, CheckpointAndHttpFigures) {
  FakeClock clock;
  ControllerMetrics m({}, clock);
  m.jobCreated("c", 2);
  m.checkpointCommitted("c", 1000);
  m.checkpointCommitted("c", 2000);
  m.checkpointFailed("c");
  m.checkpointPhase("c", CheckpointPhase::kWrite, 0.3);
  m.httpRequest("GET /v1/jobs/{name}", 404, 0.002);
  m.httpRequest("", 404, 0.001);
  const PromText t = PromText::parse(m.scrape({}));
  EXPECT_EQ(t.value("ddp_checkpoints_committed_total", {{"job", "c"}}), 2);
  EXPECT_EQ(t.value("ddp_checkpoint_bytes_total", {{"job", "c"}}), 3000);
  EXPECT_EQ(t.value("ddp_checkpoint_failures_total", {{"job", "c"}}), 1);
  EXPECT_EQ(t.value("ddp_checkpoint_seconds_count", {{"job", "c"}, {"phase", "write"}}), 1);
  EXPECT_EQ(t.value("ddp_checkpoint_seconds_count", {{"job", "c"}, {"phase", "commit"}}), 0);
  EXPECT_EQ(t.value("ddp_http_requests_total", {{"route", "GET /v1/jobs/{name}"}, {"code", "404"}}), 1);
  EXPECT_EQ(t.value("ddp_http_requests_total", {{"route", "unmatched"}, {"code", "404"}}), 1);
}

TEST(ControllerMetricsTest, CounterDeltaStartsAgainWhenTheCounterWentDown) {
  EXPECT_EQ(counterDelta(10, 15), 5);
  EXPECT_EQ(counterDelta(10, 10), 0);
  EXPECT_EQ(counterDelta(10, 3), 3);
}

}  // namespace
}  // namespace ddp::controller
