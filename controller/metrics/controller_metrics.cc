#include "controller/metrics/controller_metrics.h"

#include <algorithm>
#include <cmath>

#include <prometheus/text_serializer.h>

namespace ddp::controller {
namespace {

constexpr JobPhase kPhases[] = {JobPhase::kPending,   JobPhase::kRunning, JobPhase::kRestarting,
                                JobPhase::kSucceeded, JobPhase::kFailed,  JobPhase::kCancelled,
                                JobPhase::kSuspended};

// Observes `count` steps of mean duration `mean` in one call (Note [Counters from heartbeats]).
void observeSteps(prometheus::Histogram& h, double count, double seconds) {
  if (count <= 0) return;
  const auto& bounds = stepBuckets();
  const double mean = seconds / count;
  std::vector<double> increments(bounds.size() + 1, 0.0);
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), mean) - bounds.begin());
  increments[i] = count;
  h.ObserveMultiple(increments, seconds);
}

// Rank 0's language-model figures; a heartbeat without one leaves its gauge as it was (0 until
// the first: a job of another model keeps them at 0). perplexity = exp(val loss).
void setLanguageModelFigures(JobSeries& s, const WorkerFigures& f) {
  if (f.valLoss) {
    s.valLoss.Set(*f.valLoss);
    s.perplexity.Set(std::exp(*f.valLoss));
  }
  if (f.tokensPerSecond) s.tokensPerSecond.Set(*f.tokensPerSecond);
  if (f.mfu) s.mfu.Set(*f.mfu);
}

}  // namespace

double counterDelta(double last, double now) { return now >= last ? now - last : now; }

ControllerMetrics::ControllerMetrics(MetricsOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      families_(registry_),
      created_(families_.jobsCreated.Add({})),
      succeeded_(families_.jobsSucceeded.Add({})),
      failed_(families_.jobsFailed.Add({})),
      rendezvous_(families_.rendezvous.Add({}, rendezvousBuckets())) {
  for (JobPhase p : kPhases) byPhase_[p] = &families_.jobs.Add({{"phase", jobPhaseName(p)}});
  families_.info.Add({{"version", options_.version}}).Set(1);
  // The scrape route's own series, so that the controller families exist from the first scrape.
  families_.httpRequests.Add({{"route", "GET /metrics"}, {"code", "200"}});
  families_.httpSeconds.Add({{"route", "GET /metrics"}}, httpBuckets());
  for (const char* listener : {"public", "worker"}) {  // present at 0, for rate() and alerts
    for (const char* reason : {"capacity", "per_client", "timeout", "malformed"}) {
      families_.httpDropped.Add({{"listener", listener}, {"reason", reason}});
    }
  }
}

ControllerMetrics::~ControllerMetrics() {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.clear();  // the series go before the families
}

JobSeries* ControllerMetrics::series(const std::string& job) {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : it->second.series.get();
}

void ControllerMetrics::expire(TimePoint now) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.endedAt && now - *it->second.endedAt >= options_.retention) {
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

std::string ControllerMetrics::scrape(const std::vector<JobGauges>& live) {
  std::vector<prometheus::MetricFamily> collected;
  {
    std::lock_guard<std::mutex> lock(mu_);
    expire(clock_.now());
    std::map<JobPhase, int> counts;
    for (const auto& [job, phase] : phases_) ++counts[phase];
    for (auto& [phase, gauge] : byPhase_) gauge->Set(counts[phase]);
    std::map<std::string, const JobGauges*> byJob;
    for (const auto& g : live) byJob[g.job] = &g;
    for (auto& [job, state] : jobs_) {
      auto it = byJob.find(job);
      if (it == byJob.end()) {
        // No live state any more: its processes are gone (their last ages would stay frozen).
        state.series->setWorkers({});
        state.series->zeroHeartbeatAges();
        continue;
      }
      const JobGauges& g = *it->second;
      state.series->worldSize.Set(g.worldSize);
      state.series->generation.Set(static_cast<double>(g.generation));
      state.series->setWorkers(g.workersByState);
      state.series->setHeartbeatAges(g.heartbeatAgeSeconds);
    }
    collected = registry_.Collect();
  }
  return prometheus::TextSerializer().Serialize(collected);
}

void ControllerMetrics::jobCreated(const std::string& job, int workers) {
  std::lock_guard<std::mutex> lock(mu_);
  created_.Increment();
  phases_[job] = JobPhase::kPending;
  JobState& s = jobs_[job];
  s = JobState{};  // a name used again after a delete starts from zero
  s.series = std::make_unique<JobSeries>(families_, job);
  s.series->ensureRanks(static_cast<size_t>(std::max(workers, 0)));
}

void ControllerMetrics::jobPhase(const std::string& job, JobPhase phase) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_.now();
  expire(now);
  auto known = phases_.find(job);
  if (known != phases_.end() && !isTerminal(known->second) && known->second != phase) {
    if (phase == JobPhase::kSucceeded) succeeded_.Increment();
    if (phase == JobPhase::kFailed) failed_.Increment();
    if (phase == JobPhase::kRestarting) {
      if (JobSeries* s = series(job)) s->restarts.Increment();
    }
  }
  phases_[job] = phase;
  if (!isTerminal(phase)) {
    JobState& s = jobs_[job];
    if (!s.series) s.series = std::make_unique<JobSeries>(families_, job);
    s.endedAt.reset();
  } else if (auto it = jobs_.find(job); it != jobs_.end() && !it->second.endedAt) {
    it->second.endedAt = now;
  }
}

void ControllerMetrics::jobRemoved(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  phases_.erase(job);
  jobs_.erase(job);
}

void ControllerMetrics::rendezvousClosed(const std::string& job, int64_t generation, int worldSize, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  rendezvous_.Observe(seconds);
  if (JobSeries* s = series(job)) {
    s->worldSize.Set(worldSize);
    s->generation.Set(static_cast<double>(generation));
    s->ensureRanks(static_cast<size_t>(std::max(worldSize, 0)));
  }
}

void ControllerMetrics::heartbeat(const std::string& job, const std::string& workerId, int64_t generation, int rank,
                                  const WorkerFigures& f) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || rank < 0) return;
  JobSeries& s = *it->second.series;
  LastFigures& last = it->second.last[workerId];
  if (last.generation != generation) last = LastFigures{generation, WorkerFigures{}};
  const WorkerFigures& l = last.figures;
  s.ensureRanks(static_cast<size_t>(rank) + 1);
  s.samples.Increment(counterDelta(l.samples, f.samples));
  s.commBytes.Increment(counterDelta(l.commBytes, f.commBytes));
  if (rank == 0) {
    const double steps = counterDelta(l.steps, f.steps);
    s.steps.Increment(steps);
    observeSteps(s.stepSeconds, steps, counterDelta(l.stepSeconds, f.stepSeconds));
    s.commExposed.Increment(counterDelta(l.commExposedSeconds, f.commExposedSeconds));
    s.samplesPerSecond.Set(f.samplesPerSecond);
    s.loss.Set(f.loss);
    if (f.testAccuracy) s.testAccuracy.Set(*f.testAccuracy);
    setLanguageModelFigures(s, f);
    s.progress.Set(f.totalSteps > 0 ? static_cast<double>(f.step) / static_cast<double>(f.totalSteps) : 0);
    s.eta.Set(f.etaSeconds);
    const double saved = f.compressionUncompressedBytes - f.compressionSentBytes;
    s.compression.Set(f.commBytes > 0 ? (f.commBytes + std::max(0.0, saved)) / f.commBytes : 1);
  }
  last.figures = f;
}

void ControllerMetrics::hangDetected(const std::string& job, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->hangs(reason).Increment();
}

void ControllerMetrics::workerDied(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->deaths.Increment();
}

void ControllerMetrics::communicatorAborted(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->aborts.Increment();
}

void ControllerMetrics::recovered(const std::string& job, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->recovery.Observe(seconds);
}

void ControllerMetrics::checkpointPhase(const std::string& job, CheckpointPhase phase, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->checkpointSeconds(phase).Observe(seconds);
}

void ControllerMetrics::checkpointCommitted(const std::string& job, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) {
    s->checkpointsCommitted.Increment();
    s->checkpointBytes.Increment(static_cast<double>(std::max<int64_t>(0, bytes)));
  }
}

void ControllerMetrics::checkpointFailed(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->checkpointFailures.Increment();
}

void ControllerMetrics::checkpointsFailing(const std::string& job, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (JobSeries* s = series(job)) s->checkpointsFailing.Set(count);
}

void ControllerMetrics::httpRequest(const std::string& route, int code, double seconds) {
  // No lock: these series are never removed, and prometheus-cpp families are thread-safe.
  const std::string label = route.empty() ? "unmatched" : route;
  families_.httpRequests.Add({{"route", label}, {"code", std::to_string(code)}}).Increment();
  families_.httpSeconds.Add({{"route", label}}, httpBuckets()).Observe(seconds);
}

void ControllerMetrics::httpDropped(const std::string& listener, const std::string& reason) {
  families_.httpDropped.Add({{"listener", listener}, {"reason", reason}}).Increment();  // no lock: as above
}

}  // namespace ddp::controller
