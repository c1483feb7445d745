#include "controller/metrics/metrics_sink.h"

namespace ddp::controller {

const char* checkpointPhaseName(CheckpointPhase p) {
  switch (p) {
    case CheckpointPhase::kSnapshot: return "snapshot";
    case CheckpointPhase::kWrite: return "write";
    case CheckpointPhase::kCommit: return "commit";
  }
  return "unknown";
}

NullMetricsSink& NullMetricsSink::instance() {
  static NullMetricsSink sink;
  return sink;
}

}  // namespace ddp::controller
