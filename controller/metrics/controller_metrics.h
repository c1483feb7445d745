#pragma once
// ControllerMetrics: the MetricsSink behind GET /metrics (docs/METRICS.md). One
// prometheus-cpp registry; scrape() serialises it as Prometheus text (TextSerializer).
//
// Note [Job series lifetime]
// A job's series (label `job`) are created at zero when it is submitted (or, for a job a
// restarted controller takes over, when its phase is first reported), so that every family
// is present from the first scrape: prometheus-cpp writes nothing, not even `# TYPE`, for a
// family without series. Once the job ended, its series stay for `retention` (default 15
// minutes, the injected clock decides) so that a scrape sees the final values, then they are
// removed: the number of series stays bounded by the jobs of the last retention period. A
// deleted job's series go at once. `ddp_jobs{phase}` counts every job of the job table.
//
// Note [Counters from heartbeats]
// Workers send cumulative figures (since their trainer of the current generation started);
// the counters here add the differences between consecutive heartbeats of one worker and
// generation (a new generation, or a value smaller than the last, starts again from 0), so
// restarts and replacements never make a counter go down. Steps, step time and exposed
// communication come from rank 0 (the job's clock: redone steps after a restart count again);
// samples and communication bytes are summed over every rank. ddp_job_step_seconds observes
// each heartbeat's mean step time once per step it covers (ObserveMultiple). The compression
// ratio is rank 0's, over its current generation: (bytes sent + bytes compression saved) /
// bytes sent.
// Thread model: every method is thread-safe (one mutex); it never calls back into its callers.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/registry.h>

#include "common/clock.h"
#include "controller/metrics/job_series.h"
#include "controller/metrics/metric_families.h"
#include "controller/metrics/metrics_sink.h"

namespace ddp::controller {

inline constexpr const char* kControllerVersion = "0.1.0";

struct MetricsOptions {
  Duration retention = std::chrono::minutes(15);  // Note [Job series lifetime]
  std::string version = kControllerVersion;
};

class ControllerMetrics final : public MetricsSink {
 public:
  explicit ControllerMetrics(MetricsOptions options = {}, const Clock& clock = SystemClock::instance());
  ~ControllerMetrics() override;

  // The text exposition (format 0.0.4) after applying `live` (the job manager's gauges at this
  // moment) and dropping the series of jobs whose retention ran out.
  std::string scrape(const std::vector<JobGauges>& live);

  void jobCreated(const std::string& job, int workers) override;
  void jobPhase(const std::string& job, JobPhase phase) override;
  void jobRemoved(const std::string& job) override;
  void rendezvousClosed(const std::string& job, int64_t generation, int worldSize, double seconds) override;
  void heartbeat(const std::string& job, const std::string& workerId, int64_t generation, int rank,
                 const WorkerFigures& figures) override;
  void hangDetected(const std::string& job, const std::string& reason) override;
  void workerDied(const std::string& job) override;
  void communicatorAborted(const std::string& job) override;
  void recovered(const std::string& job, double seconds) override;
  void checkpointPhase(const std::string& job, CheckpointPhase phase, double seconds) override;
  void checkpointCommitted(const std::string& job, int64_t bytes) override;
  void checkpointFailed(const std::string& job) override;
  void httpRequest(const std::string& route, int code, double seconds) override;
  void httpDropped(const std::string& listener, const std::string& reason) override;
  void checkpointsFailing(const std::string& job, int count) override;

 private:
  struct LastFigures {
    int64_t generation = -1;
    WorkerFigures figures;
  };
  struct JobState {
    std::unique_ptr<JobSeries> series;
    std::optional<TimePoint> endedAt;
    std::map<std::string, LastFigures> last;  // by worker id
  };
  JobSeries* series(const std::string& job);  // nullptr when the job has none; mu_ held
  void expire(TimePoint now);                 // mu_ held

  const MetricsOptions options_;
  const Clock& clock_;
  std::mutex mu_;  // guards phases_, jobs_ and the registry's series
  prometheus::Registry registry_;
  MetricFamilies families_;
  std::map<JobPhase, prometheus::Gauge*> byPhase_;
  prometheus::Counter& created_;
  prometheus::Counter& succeeded_;
  prometheus::Counter& failed_;
  prometheus::Histogram& rendezvous_;
  std::map<std::string, JobPhase> phases_;  // every job of the table
  std::map<std::string, JobState> jobs_;    // jobs with series
};

// The difference between two readings of a cumulative counter: `now` itself when it went
// down (the counter started again).
double counterDelta(double last, double now);

}  // namespace ddp::controller
