#pragma once
// JobSeries: every series of one job (label job="<name>"), created at zero when the job
// starts, so each family is present from the first scrape, and removed together when the
// object goes (the job's retention period passed, or it was deleted).
// Thread model: used under ControllerMetrics::mu_ only.

#include <map>
#include <string>
#include <vector>

#include "controller/metrics/metric_families.h"
#include "controller/metrics/metrics_sink.h"

namespace ddp::controller {

// The fault verdicts' reasons (ddp_hangs_detected_total{reason}), created at zero.
inline constexpr const char* kHangReasons[] = {"Exited", "Unresponsive", "CollectiveStuck", "NoProgress",
                                               "CollectiveFailed"};
// Worker states (WorkerRecord::state) whose ddp_job_workers series exist from the start.
inline constexpr const char* kWorkerStates[] = {"Starting", "Waiting",   "Running", "Rejoining",
                                                "Replacing", "Succeeded", "Failed",  "Stopped"};

class JobSeries {
 public:
  JobSeries(MetricFamilies& families, std::string job);
  ~JobSeries();
  JobSeries(const JobSeries&) = delete;
  JobSeries& operator=(const JobSeries&) = delete;

  // ddp_job_workers{state}: `counts` for the listed states, 0 for the others.
  void setWorkers(const std::map<std::string, int>& counts);
  // ddp_worker_heartbeat_age_seconds{rank}: one series per rank 0..ages.size()-1.
  void setHeartbeatAges(const std::vector<double>& ages);
  // Every rank's series at 0 (the job has no live worker: before the first heartbeat, as at
  // creation, and once it ended); none is removed, so the family stays present.
  void zeroHeartbeatAges();
  // Series for ranks 0..ranks-1 exist (new ones at 0); none is removed.
  void ensureRanks(size_t ranks);
  prometheus::Counter& hangs(const std::string& reason);
  prometheus::Histogram& checkpointSeconds(CheckpointPhase phase);

  prometheus::Counter& restarts;
  prometheus::Gauge& worldSize;
  prometheus::Gauge& generation;
  prometheus::Counter& steps;
  prometheus::Counter& samples;
  prometheus::Gauge& samplesPerSecond;
  prometheus::Gauge& loss;
  prometheus::Gauge& testAccuracy;
  prometheus::Gauge& valLoss;
  prometheus::Gauge& perplexity;
  prometheus::Gauge& tokensPerSecond;
  prometheus::Gauge& mfu;
  prometheus::Gauge& progress;
  prometheus::Gauge& eta;
  prometheus::Histogram& stepSeconds;
  prometheus::Counter& commBytes;
  prometheus::Counter& commExposed;
  prometheus::Gauge& compression;
  prometheus::Counter& deaths;
  prometheus::Counter& aborts;
  prometheus::Histogram& recovery;
  prometheus::Counter& checkpointBytes;
  prometheus::Counter& checkpointsCommitted;
  prometheus::Counter& checkpointFailures;
  prometheus::Gauge& checkpointsFailing;  // failed in a row since the last commit

 private:
  MetricFamilies& f_;
  const std::string job_;
  std::map<std::string, prometheus::Gauge*> workers_;    // by state
  std::vector<prometheus::Gauge*> heartbeatAges_;        // by rank
  std::map<std::string, prometheus::Counter*> hangs_;    // by reason
  std::map<CheckpointPhase, prometheus::Histogram*> checkpointSeconds_;
};

}  // namespace ddp::controller
