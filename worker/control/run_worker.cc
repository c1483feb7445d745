#include "worker/control/run_worker.h"

#include <utility>

#include "worker/control/worker_entry.h"
#include "worker/training/trainer_config.h"
#include "worker/training/training_setup.h"

namespace ddp::worker {

namespace {

// The built-in model factory as a named type: partsOf recognises it (std::function::target) and
// lets the trainer fit and build the model itself, so that the checkpoint's model description
// (section model_spec, for export and predict) holds the widths the data decided.
struct BuiltInModel {
  Result<std::unique_ptr<model::TrainableModel>> operator()(const ModelContext& c) const {
    if (c.engineConfig == nullptr || c.engineData == nullptr) {
      return invalidArgument("the built-in model factory needs the engine's configuration and data");
    }
    // fitModelToData sizes the built-in models from a user's data set (idx, npy, csv).
    runtime::TrainerConfig config = *c.engineConfig;
    DDP_RETURN_IF_ERROR(runtime::fitModelToData(config, *c.engineData));
    return runtime::buildModel(config);
  }
};

}  // namespace

ModelFactory builtInModelFactory() { return BuiltInModel{}; }

DatasetFactory builtInDatasetFactory() {
  return [](const DatasetContext& c) -> Result<Datasets> {
    if (c.engineConfig == nullptr) return invalidArgument("the built-in dataset factory needs the engine's configuration");
    DDP_ASSIGN_OR_RETURN(runtime::TrainingData loaded, runtime::loadTrainingData(*c.engineConfig));
    Datasets out;
    out.engineData = std::make_shared<const runtime::TrainingData>(std::move(loaded));
    return out;
  };
}

namespace {

runtime::WorkerParts partsOf(ModelFactory modelFactory, DatasetFactory datasetFactory) {
  runtime::WorkerParts parts;
  if (datasetFactory) {
    parts.loadData = [f = std::move(datasetFactory)](const runtime::TrainerConfig& config)
        -> Result<std::shared_ptr<const runtime::TrainingData>> {
      DatasetContext context;
      context.seed = config.seed;
      context.engineConfig = &config;
      DDP_ASSIGN_OR_RETURN(Datasets sets, f(context));
      if (sets.engineData) return sets.engineData;
      DDP_RETURN_IF_ERROR(sets.train.validate().withContext("the trainer's training split"));
      DDP_RETURN_IF_ERROR(sets.test.validate().withContext("the trainer's test split"));
      if (sets.train.size() == 0) return invalidArgument("the trainer's training split holds no sample");
      auto data = std::make_shared<runtime::TrainingData>();
      data->train = std::move(sets.train);
      data->test = std::move(sets.test);
      return std::shared_ptr<const runtime::TrainingData>(std::move(data));
    };
  }
  if (modelFactory && modelFactory.target<BuiltInModel>() == nullptr) {
    parts.buildModel = [f = std::move(modelFactory)](const runtime::TrainerConfig& config,
                                                     const runtime::TrainingData& data) {
      ModelContext context;
      context.device = config.device;
      context.seed = config.seed;
      context.cpuThreads = config.cpuThreads;
      context.sampleShape = data.train.sampleShape;
      context.classes = data.train.classes;
      context.engineConfig = &config;
      context.engineData = &data;
      return f(context);
    };
  }
  return parts;
}

}  // namespace

int runWorker(int argc, char** argv, ModelFactory modelFactory, DatasetFactory datasetFactory) {
  return runtime::runWorker(argc, argv, partsOf(std::move(modelFactory), std::move(datasetFactory)));
}

}  // namespace ddp::worker
