#pragma once
// MetricsSink: the narrow interface through which the job manager and the API server report
// what happens (docs/METRICS.md). They only call it; ControllerMetrics turns the calls into
// Prometheus series. NullMetricsSink ignores everything (a JobManager built without metrics).
// Thread model: implementations are thread-safe; callers may hold their own locks (a sink
// never calls back into its caller).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/store/job_record.h"

namespace ddp::controller {

// One worker's figures from one heartbeat. Counters are cumulative over the steps its current
// trainer ran (they start again at 0 in every generation: the sink takes the differences).
struct WorkerFigures {
  int64_t step = 0, totalSteps = 0;
  double loss = 0;
  double samplesPerSecond = 0;  // global, as the worker measures it
  std::optional<double> testAccuracy;
  // Language models only; empty for other models (the gauges keep their last value).
  std::optional<double> valLoss, tokensPerSecond, mfu;
  double etaSeconds = 0;        // the controller's estimate (rank 0's heartbeats)
  // Cumulative counters (docs/API.md, "Heartbeats", `counters`).
  double samples = 0, steps = 0, stepSeconds = 0;
  double commBytes = 0, commExposedSeconds = 0;
  double compressionUncompressedBytes = 0, compressionSentBytes = 0;
};

// The phases of writing a checkpoint (ddp_checkpoint_seconds{phase}).
enum class CheckpointPhase { kSnapshot, kWrite, kCommit };
const char* checkpointPhaseName(CheckpointPhase p);  // "snapshot", "write", "commit"

// A live job's state at scrape time (the pull side: JobManager::gauges()).
struct JobGauges {
  std::string job;
  int worldSize = 0;           // the active generation's, 0 when none
  int64_t generation = 0;
  std::map<std::string, int> workersByState;  // WorkerRecord::state -> count
  std::vector<double> heartbeatAgeSeconds;    // by rank of the active generation
};

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  // --- jobs
  // A job was submitted for `workers` workers: its series are created at zero (one
  // heartbeat-age series per rank it will have).
  virtual void jobCreated(const std::string& job, int workers) = 0;
  // The job is in `phase` now (every change, and every stored job when the controller starts).
  virtual void jobPhase(const std::string& job, JobPhase phase) = 0;
  // The job was deleted: its series go at once.
  virtual void jobRemoved(const std::string& job) = 0;

  // --- membership and training
  // The job's round closed: generation `generation` with `worldSize` ranks, `seconds` after its
  // first join.
  virtual void rendezvousClosed(const std::string& job, int64_t generation, int worldSize, double seconds) = 0;
  // A heartbeat of the worker holding `rank` in generation `generation`.
  virtual void heartbeat(const std::string& job, const std::string& workerId, int64_t generation, int rank,
                         const WorkerFigures& figures) = 0;

  // --- faults
  // A hang detector verdict (`reason`: Exited, Unresponsive, CollectiveStuck, NoProgress,
  // CollectiveFailed).
  virtual void hangDetected(const std::string& job, const std::string& reason) = 0;
  // A worker process died (exited with a failure the controller did not cause).
  virtual void workerDied(const std::string& job) = 0;
  // A worker aborted its communicator (told to by the controller, or on its own).
  virtual void communicatorAborted(const std::string& job) = 0;
  // Every rank stepped again, `seconds` after the verdict.
  virtual void recovered(const std::string& job, double seconds) = 0;

  // --- checkpoints
  virtual void checkpointPhase(const std::string& job, CheckpointPhase phase, double seconds) = 0;
  // A checkpoint was committed (its bytes: what the ranks reported writing).
  virtual void checkpointCommitted(const std::string& job, int64_t bytes) = 0;
  virtual void checkpointFailed(const std::string& job) = 0;
  // Checkpoints failed in a row since the last commit (Note [Checkpoints failing]).
  virtual void checkpointsFailing(const std::string& job, int count) = 0;

  // --- controller
  // An answered HTTP request: `route` is "METHOD /pattern" ("" when no route matched).
  virtual void httpRequest(const std::string& route, int code, double seconds) = 0;
  // A connection the server ended itself (http::ServerOptions::onDropped): `listener` "public" or
  // "worker", `reason` capacity | per_client | timeout | malformed.
  virtual void httpDropped(const std::string& listener, const std::string& reason) = 0;
};

class NullMetricsSink final : public MetricsSink {
 public:
  static NullMetricsSink& instance();
  void jobCreated(const std::string&, int) override {}
  void jobPhase(const std::string&, JobPhase) override {}
  void jobRemoved(const std::string&) override {}
  void rendezvousClosed(const std::string&, int64_t, int, double) override {}
  void heartbeat(const std::string&, const std::string&, int64_t, int, const WorkerFigures&) override {}
  void hangDetected(const std::string&, const std::string&) override {}
  void workerDied(const std::string&) override {}
  void communicatorAborted(const std::string&) override {}
  void recovered(const std::string&, double) override {}
  void checkpointPhase(const std::string&, CheckpointPhase, double) override {}
  void checkpointCommitted(const std::string&, int64_t) override {}
  void checkpointFailed(const std::string&) override {}
  void checkpointsFailing(const std::string&, int) override {}
  void httpRequest(const std::string&, int, double) override {}
  void httpDropped(const std::string&, const std::string&) override {}
};

}  // namespace ddp::controller
