#pragma once
// The figures of one heartbeat that the metrics take (MetricsSink::heartbeat).
// Thread model: a pure function.

#include "common/protocol/heartbeat.h"
#include "controller/metrics/metrics_sink.h"

namespace ddp::controller {

using protocol::Heartbeat;

// `etaSeconds` is left at 0: the job manager fills in its own estimate.
WorkerFigures workerFigures(const Heartbeat& hb);

}  // namespace ddp::controller
