#include "controller/metrics/worker_figures.h"

namespace ddp::controller {

WorkerFigures workerFigures(const Heartbeat& hb) {
  WorkerFigures f;
  f.step = hb.step;
  f.totalSteps = hb.totalSteps;
  f.loss = hb.loss;
  f.samplesPerSecond = hb.samplesPerSecond;
  f.testAccuracy = hb.testAccuracy;
  f.valLoss = hb.valLoss;
  f.tokensPerSecond = hb.tokensPerSecond;
  f.mfu = hb.mfu;
  f.samples = static_cast<double>(hb.counters.samples);
  f.steps = static_cast<double>(hb.counters.steps);
  f.stepSeconds = hb.counters.stepSeconds;
  f.commBytes = static_cast<double>(hb.counters.commBytes);
  f.commExposedSeconds = hb.counters.commExposedSeconds;
  f.compressionUncompressedBytes = static_cast<double>(hb.counters.compressionUncompressedBytes);
  f.compressionSentBytes = static_cast<double>(hb.counters.compressionSentBytes);
  return f;
}

}  // namespace ddp::controller
