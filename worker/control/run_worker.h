#pragma once
// The engine's entry point for a trainer of one's own (docs/EXTENDING.md): a program linked to
// the installed DdpEngine package hands its model and data set factories to runWorker, which runs
// them through the same worker runtime as ddp-worker (which is itself such a program, with the
// built-in factories): the environment contract and flags, registration, rendezvous, heartbeats,
// DDP with the job's comm hook, the optimizer, two-phase checkpoints and resume, hang recovery,
// healing from live peers and elastic world sizes. The job's YAML still says everything but the
// model and the data: spec.model.type picks the step loop (anything but gpt: a classifier's, whose
// batches are float features and int32 classes), and the data section is not read by a user's
// dataset factory unless it chooses to.
//
// Contract of the factories (both must be deterministic: every rank, and every replacement
// worker, must get the same data set and the same initial parameters):
//  - DatasetFactory: called once per worker process (the data set is kept across recoveries),
//    possibly on a helper thread while the worker connects. Returns both splits; every rank loads
//    all of each (the engine's sampler deals out the samples). An error is reported as the
//    worker's failure (the job fails, naming it).
//  - ModelFactory: called in every generation (after a recovery the model is built again, then
//    the engine loads the survivors' or the checkpoint's state into it). Returns the model on
//    context.device, initialised from context.seed. A model::Module (Sequential, or a subclass
//    of one's own) trains with softmax cross-entropy on class labels, or the mean squared error on
//    float targets (Dataset::floatTargets, with spec.loss: mse); its input shape must hold as
//    many values as the data set's samples.
// Thread model: runWorker runs on the calling (main) thread and owns every thread it starts; call
// it once per process.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "worker/control/engine_version.h"
#include "worker/data/dataset.h"
#include "worker/model/trainable_model.h"

namespace ddp::runtime {
struct TrainerConfig;  // the engine's own (opaque here)
struct TrainingData;   // the engine's own (opaque here)
}  // namespace ddp::runtime

namespace ddp::worker {

// What a model factory is told.
struct ModelContext {
  Device device = Device::cpu();   // spec.device (under cuda: this rank's GPU)
  uint64_t seed = 0;               // spec.seed: the same on every rank
  int cpuThreads = 1;              // spec.cpuThreads (OpenBLAS threads)
  std::vector<int64_t> sampleShape;  // of the training split's samples, e.g. {1, 28, 28}
  int classes = 0;                 // of the training split
  // The engine's own view, for the built-in factory (a user's factory leaves them alone).
  const runtime::TrainerConfig* engineConfig = nullptr;
  const runtime::TrainingData* engineData = nullptr;
};

// What a dataset factory is told.
struct DatasetContext {
  uint64_t seed = 0;  // spec.seed
  // The engine's own view, for the built-in factory.
  const runtime::TrainerConfig* engineConfig = nullptr;
};

// Both splits: `test` is what the engine evaluates after every epoch (the job's accuracy).
struct Datasets {
  data::Dataset train;
  data::Dataset test;
  // Set by the built-in factory only (token data sets, standardization): the engine's whole
  // form of the data, which then replaces `train` and `test`.
  std::shared_ptr<const runtime::TrainingData> engineData;
};

using ModelFactory = std::function<Result<std::unique_ptr<model::TrainableModel>>(const ModelContext&)>;
using DatasetFactory = std::function<Result<Datasets>(const DatasetContext&)>;

// The factories ddp-worker runs: the model and the data set the job's spec declares.
ModelFactory builtInModelFactory();
DatasetFactory builtInDatasetFactory();

// Runs one worker of a job and returns the process's exit status (0 finished or stopped on
// request, 1 failure, 2 bad configuration: worker_entry.h). argv holds ddp-worker's flags only
// (`--help` lists them; the launcher's environment usually says everything): a program with
// flags of its own takes them out first. A null factory is the built-in one.
int runWorker(int argc, char** argv, ModelFactory modelFactory, DatasetFactory datasetFactory);

}  // namespace ddp::worker
