#pragma once
// MetricFamilies: every Prometheus family the controller exports, registered on one registry:
// names, types, help texts and histogram buckets in one place. The names are a contract
// (dashboards and alerts depend on them): docs/METRICS.md lists each with its labels.
// Thread model: built once; prometheus-cpp families are thread-safe.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace ddp::controller {

struct MetricFamilies {
  explicit MetricFamilies(prometheus::Registry& registry);

  template <typename T>
  using Family = prometheus::Family<T>;
  using Counter = prometheus::Counter;
  using Gauge = prometheus::Gauge;
  using Histogram = prometheus::Histogram;

  // jobs
  Family<Gauge>& jobs;                // {phase}
  Family<Counter>& jobsCreated;
  Family<Counter>& jobsSucceeded;
  Family<Counter>& jobsFailed;
  Family<Counter>& restarts;          // {job}
  // membership
  Family<Gauge>& workers;             // {job,state}
  Family<Gauge>& worldSize;           // {job}
  Family<Gauge>& generation;          // {job}
  Family<Histogram>& rendezvous;
  Family<Gauge>& heartbeatAge;        // {job,rank}
  // training
  Family<Counter>& steps;             // {job}
  Family<Counter>& samples;
  Family<Gauge>& samplesPerSecond;
  Family<Gauge>& loss;
  Family<Gauge>& testAccuracy;
  Family<Gauge>& valLoss;             // language models (0 until reported)
  Family<Gauge>& perplexity;
  Family<Gauge>& tokensPerSecond;
  Family<Gauge>& mfu;
  Family<Gauge>& progress;
  Family<Gauge>& eta;
  Family<Histogram>& stepSeconds;
  // communication
  Family<Counter>& commBytes;         // {job}
  Family<Counter>& commExposed;
  Family<Gauge>& compression;
  // faults
  Family<Counter>& hangs;             // {job,reason}
  Family<Counter>& deaths;            // {job}
  Family<Counter>& aborts;
  Family<Histogram>& recovery;
  // checkpoints
  Family<Histogram>& checkpointSeconds;  // {job,phase}
  Family<Counter>& checkpointBytes;      // {job}
  Family<Counter>& checkpointsCommitted;
  Family<Counter>& checkpointFailures;
  Family<Gauge>& checkpointsFailing;    // {job}
  // controller
  Family<Counter>& httpRequests;      // {route,code}
  Family<Histogram>& httpSeconds;     // {route}
  Family<Counter>& httpDropped;       // {listener,reason}
  Family<Gauge>& info;                // {version}
};

// Histogram buckets (seconds).
const prometheus::Histogram::BucketBoundaries& rendezvousBuckets();
const prometheus::Histogram::BucketBoundaries& stepBuckets();
const prometheus::Histogram::BucketBoundaries& recoveryBuckets();
const prometheus::Histogram::BucketBoundaries& checkpointBuckets();
const prometheus::Histogram::BucketBoundaries& httpBuckets();

}  // namespace ddp::controller
