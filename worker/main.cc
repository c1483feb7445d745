// ddp-worker: one training worker, the engine's entry point (worker/control/run_worker.h) with the
// built-in model and data set factories: the same path a user's trainer takes (docs/EXTENDING.md).
#include "worker/control/run_worker.h"

int main(int argc, char** argv) {
  return ddp::worker::runWorker(argc, argv, ddp::worker::builtInModelFactory(), ddp::worker::builtInDatasetFactory());
}
