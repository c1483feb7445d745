#include "controller/metrics/metric_families.h"

namespace ddp::controller {
namespace {

using prometheus::Registry;

prometheus::Family<prometheus::Counter>& counter(Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Gauge>& gauge(Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& histogram(Registry& r, const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

const prometheus::Histogram::BucketBoundaries& rendezvousBuckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
  return b;
}
const prometheus::Histogram::BucketBoundaries& stepBuckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return b;
}
const prometheus::Histogram::BucketBoundaries& recoveryBuckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600};
  return b;
}
const prometheus::Histogram::BucketBoundaries& checkpointBuckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return b;
}
const prometheus::Histogram::BucketBoundaries& httpBuckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                         0.1,    0.25,  0.5,    1,     2.5,   5};
  return b;
}

MetricFamilies::MetricFamilies(Registry& r)
    : jobs(gauge(r, "ddp_jobs", "Jobs in the job table by phase.")),
      jobsCreated(counter(r, "ddp_jobs_created_total", "Jobs submitted.")),
      jobsSucceeded(counter(r, "ddp_jobs_succeeded_total", "Jobs that ended Succeeded.")),
      jobsFailed(counter(r, "ddp_jobs_failed_total", "Jobs that ended Failed.")),
      restarts(counter(r, "ddp_job_restarts_total", "In-process restarts of a job after a fault verdict.")),
      workers(gauge(r, "ddp_job_workers", "A job's workers by state.")),
      worldSize(gauge(r, "ddp_job_world_size", "World size of the job's active generation (0 when none).")),
      generation(gauge(r, "ddp_job_generation", "The job's rendezvous generation.")),
      rendezvous(histogram(r, "ddp_rendezvous_seconds", "Seconds from a round's first join to its close.")),
      heartbeatAge(gauge(r, "ddp_worker_heartbeat_age_seconds", "Seconds since the rank's last heartbeat.")),
      steps(counter(r, "ddp_job_steps_total", "Optimizer steps the job ran (rank 0; redone steps count again).")),
      samples(counter(r, "ddp_job_samples_total", "Training samples the job's ranks processed.")),
      samplesPerSecond(gauge(r, "ddp_job_samples_per_second", "Global training throughput (rank 0's measure).")),
      loss(gauge(r, "ddp_job_loss", "Rank 0's mean loss of its last step.")),
      testAccuracy(gauge(r, "ddp_job_test_accuracy", "Last evaluation's test accuracy (fraction).")),
      valLoss(gauge(r, "ddp_job_val_loss", "Language models: last validation's mean loss, nats per token (0 until one).")),
      perplexity(gauge(r, "ddp_job_perplexity", "Language models: exp(validation loss) (0 until a validation).")),
      tokensPerSecond(gauge(r, "ddp_job_tokens_per_second", "Language models: global training tokens per second.")),
      mfu(gauge(r, "ddp_job_mfu", "Language models: model FLOPs utilisation, fraction of the devices' peak.")),
      progress(gauge(r, "ddp_job_progress_ratio", "Steps done / total steps.")),
      eta(gauge(r, "ddp_job_eta_seconds", "Estimated seconds until the job's last step.")),
      stepSeconds(histogram(r, "ddp_job_step_seconds", "Seconds per optimizer step (rank 0, per-heartbeat means).")),
      commBytes(counter(r, "ddp_job_comm_bytes_total", "Bytes the gradient reduction handed to collectives, all ranks.")),
      commExposed(counter(r, "ddp_job_comm_exposed_seconds_total",
                          "Seconds rank 0 waited for gradient communication after backward (not hidden).")),
      compression(gauge(r, "ddp_job_compression_ratio",
                        "Gradient bytes without compression / bytes sent (1 without compression).")),
      hangs(counter(r, "ddp_hangs_detected_total", "Hang detector verdicts by reason.")),
      deaths(counter(r, "ddp_worker_deaths_total", "Worker processes that died of a failure.")),
      aborts(counter(r, "ddp_aborts_total", "Communicator aborts of the job's workers.")),
      recovery(histogram(r, "ddp_recovery_seconds", "Seconds from a fault verdict until every rank stepped again.")),
      checkpointSeconds(histogram(r, "ddp_checkpoint_seconds", "Seconds per checkpoint phase (snapshot, write, commit).")),
      checkpointBytes(counter(r, "ddp_checkpoint_bytes_total", "Bytes of committed checkpoints.")),
      checkpointsCommitted(counter(r, "ddp_checkpoints_committed_total", "Checkpoints committed.")),
      checkpointFailures(counter(r, "ddp_checkpoint_failures_total", "Checkpoints that failed.")),
      checkpointsFailing(gauge(r, "ddp_job_checkpoints_failing",
                               "Checkpoints that failed in a row since the job's last commit (0 after a commit).")),
      httpRequests(counter(r, "ddp_http_requests_total", "HTTP requests answered, by route and status code.")),
      httpSeconds(histogram(r, "ddp_http_request_seconds", "Seconds from a request's arrival to its answer.")),
      httpDropped(counter(r, "ddp_http_connections_dropped_total",
                          "Connections the server ended itself: refused at a cap, or a request timed out or malformed.")),
      info(gauge(r, "ddp_controller_info", "The controller's version (value 1).")) {}

}  // namespace ddp::controller
