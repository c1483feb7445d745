#include "controller/metrics/worker_figures.h"

namespace ddp::controller {
namespace {

double counter(const Heartbeat& hb, const char* name) {
  auto it = hb.counters.find(name);
  return it == hb.counters.end() ? 0 : it->second;
}

}  // namespace

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
  f.samples = counter(hb, "samples");
  f.steps = counter(hb, "steps");
  f.stepSeconds = counter(hb, "stepSeconds");
  f.commBytes = counter(hb, "commBytes");
  f.commExposedSeconds = counter(hb, "commExposedSeconds");
  f.compressionUncompressedBytes = counter(hb, "compressionUncompressedBytes");
  f.compressionSentBytes = counter(hb, "compressionSentBytes");
  return f;
}

}  // namespace ddp::controller
