#pragma once
// The trainer's tests' shared runs: a small synthetic MLP configuration and a run of the whole
// trainer on thread-ranks over LocalBackend (real files where the configuration names any).
// Thread model: the test's thread; train() runs one thread per rank and joins them.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/support/local_backend.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::test {

// `inputs` synthetic features in 4 classes, one hidden layer of `hidden`, `samples` training
// samples and 64 held out, batch 16, one epoch, SGD with momentum, no log lines.
inline runtime::TrainerConfig smallTrainerConfig(const std::string& job, int inputs, int hidden, int64_t samples) {
  runtime::TrainerConfig c;
  c.job = job;
  c.seed = 7;
  c.model = ModelType::kMlp;
  c.mlp.inputs = inputs;
  c.mlp.hidden = {hidden};
  c.mlp.classes = 4;
  c.data = DatasetKind::kSynthetic;
  c.synthetic.samples = samples;
  c.synthetic.sampleShape = {inputs};
  c.synthetic.classes = 4;
  c.synthetic.seed = 3;
  c.syntheticTestSamples = 64;
  c.batchSize = 16;
  c.epochs = 1;
  c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f);
  c.logEverySteps = 1000;
  c.evalBatchSize = 64;
  return c;
}

// Creates and runs the trainer on `world` thread-ranks; each rank's create() or run() outcome.
// stopAfterStep >= 0: every rank stops during that step (TrainingFaults::stopDuring).
inline std::vector<Result<runtime::TrainResult>> trainOnThreads(int world, const runtime::TrainerConfig& config,
                                                                int64_t stopAfterStep = -1) {
  std::vector<Result<runtime::TrainResult>> out(static_cast<size_t>(world),
                                                Result<runtime::TrainResult>(internalError("not run")));
  runtime::TrainingFaults faults;
  if (stopAfterStep >= 0) faults.stopDuring(stopAfterStep);
  runtime::TrainerIo io;
  io.progress = nullptr;
  io.faults = &faults;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    auto trainer = runtime::Trainer::create(config, backend, io);
    out[static_cast<size_t>(rank)] = trainer.isOk() ? (*trainer)->run() : Result<runtime::TrainResult>(trainer.status());
  });
  return out;
}

}  // namespace ddp::test
