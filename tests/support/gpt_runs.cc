#include "tests/support/gpt_runs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/split_mix_rng.h"
#include "tests/support/local_backend.h"
#include "worker/training/training_faults.h"

namespace ddp::test {

using runtime::TrainerConfig;

std::vector<int32_t> markovTokens(int64_t n, uint64_t seed) {
  SplitMixRng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  int32_t prev = 0;
  for (auto& x : t) {
    x = rng.next() % 10 == 0 ? static_cast<int32_t>(rng.next() % kGptVocab) : (3 * prev + 1) % kGptVocab;
    prev = x;
  }
  return t;
}

TrainerConfig tinyGptConfig(const std::string& trainPath) {
  TrainerConfig c;
  c.job = "gpt-unit";
  c.seed = 11;
  c.model = ModelType::kGpt;
  c.gpt.vocabSize = kGptVocab;
  c.gpt.contextLength = 8;
  c.gpt.layers = 1;
  c.gpt.heads = 2;
  c.gpt.dModel = 16;
  c.data = DatasetKind::kTokens;
  c.trainTokens.path = trainPath;
  c.valFraction = 0.1;
  c.batchSize = 8;
  c.epochs = 0;
  c.maxSteps = 20;
  c.evalEverySteps = 5;
  c.optimizer = optim::OptimizerConfig::adamw(1e-2f, 0.9f, 0.99f, 1e-8f, 0.1f);
  c.weightDecayOn = WeightDecayOn::kLinearWeights;
  c.lr.kind = runtime::LrScheduleKind::kCosine;
  c.lr.warmupSteps = 2;
  c.lr.minLr = 1e-3;
  c.logEverySteps = 1000;
  return c;
}

std::vector<RankRun> trainRanks(int world, const TrainerConfig& config, runtime::TrainerIo io) {
  std::vector<RankRun> out(static_cast<size_t>(world));
  io.progress = nullptr;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    RankRun& mine = out[static_cast<size_t>(rank)];
    runtime::TrainerIo own = io;
    own.onProgress = [&mine](const runtime::TrainingProgress& p) { mine.progress = p; };
    auto trainer = runtime::Trainer::create(config, backend, own);
    if (!trainer.isOk()) {
      mine.status = trainer.status();
      return;
    }
    auto r = (*trainer)->run();
    if (!r.isOk()) {
      mine.status = r.status();
      (*trainer)->stopCommunication();
      return;
    }
    mine.result = *r;
    mine.params = copyParams((*trainer)->model());
    mine.data = (*trainer)->data();
  });
  return out;
}

Params copyParams(model::TrainableModel& m) {
  Params out;
  for (Parameter* p : m.parameters()) {
    const float* d = static_cast<const float*>(p->data);
    out.emplace_back(d, d + p->numel());
  }
  return out;
}

ResumeRuns stopAndResume(runtime::TrainerConfig config, const std::string& checkpointDir) {
  ResumeRuns runs;
  runs.reference = trainRanks(2, config);
  config.checkpointDir = checkpointDir;
  config.checkpointEverySteps = 4;
  const runtime::TrainingFaults stop = runtime::TrainingFaults().stopDuring(7);
  runtime::TrainerIo io;
  io.faults = &stop;
  runs.first = trainRanks(2, config, io);
  runs.resumed = trainRanks(2, config);
  return runs;
}

bool bitwiseEqual(const Params& a, const Params& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

float maxAbsDiff(const Params& a, const Params& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return INFINITY;
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

}  // namespace ddp::test
