// two-tower-trainer: a worker program of one's own (docs/EXTENDING.md). It runs under the
// controller exactly as ddp-worker does (spec.worker.command in two-tower.yaml), with its own
// model (TwoTower) and data set (two views per sample) handed to the engine's runWorker.
//   two-tower-trainer [--tower-width N] [ddp-worker flags...]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <ddp/worker/control/run_worker.h>
#include <ddp/worker/model/model_options.h>

#include "two_tower.h"
#include "two_view_data.h"

namespace {

constexpr uint64_t kCentreSalt = 0x5eed;  // the centres: from the job's seed, shared by both splits

// Takes this program's own flags out of argv (runWorker reads ddp-worker's flags only).
int takeOwnFlags(int argc, char** argv, int64_t* towerWidth, std::vector<char*>* rest) {
  rest->push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--tower-width" && i + 1 < argc) {
      *towerWidth = std::strtoll(argv[++i], nullptr, 10);
      if (*towerWidth < 1) {
        std::fprintf(stderr, "two-tower-trainer: --tower-width must be >= 1, got %s\n", argv[i]);
        return 2;
      }
    } else {
      rest->push_back(argv[i]);
    }
  }
  rest->push_back(nullptr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t towerWidth = 32;
  std::vector<char*> rest;
  if (int bad = takeOwnFlags(argc, argv, &towerWidth, &rest); bad != 0) return bad;

  ddp::worker::DatasetFactory data = [](const ddp::worker::DatasetContext& c) -> ddp::Result<ddp::worker::Datasets> {
    two_tower::TwoViewOptions o;
    ddp::worker::Datasets sets;
    DDP_ASSIGN_OR_RETURN(sets.train, two_tower::makeTwoViewData(o, c.seed + kCentreSalt, c.seed));
    o.samples = 1024;
    DDP_ASSIGN_OR_RETURN(sets.test, two_tower::makeTwoViewData(o, c.seed + kCentreSalt, c.seed + 1));
    return sets;
  };
  ddp::worker::ModelFactory model =
      [towerWidth](const ddp::worker::ModelContext& c) -> ddp::Result<std::unique_ptr<ddp::model::TrainableModel>> {
    if (c.sampleShape.size() != 2 || c.sampleShape[0] != 2) {
      return ddp::invalidArgument("two-tower: samples must have two views ({2, D})");
    }
    ddp::model::ModelOptions mo;
    mo.device = c.device;
    mo.seed = c.seed;
    mo.cpuThreads = c.cpuThreads;
    DDP_ASSIGN_OR_RETURN(std::unique_ptr<ddp::kernels::LayerOps> ops, ddp::model::makeLayerOps(mo));
    auto net = std::make_unique<two_tower::TwoTower>(std::move(ops), c.sampleShape[1], towerWidth, c.classes);
    net->initialize(c.seed);
    return std::unique_ptr<ddp::model::TrainableModel>(std::move(net));
  };
  return ddp::worker::runWorker(static_cast<int>(rest.size()) - 1, rest.data(), model, data);
}
