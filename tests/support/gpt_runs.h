#pragma once
// GPT training runs for the trainer tests: a learnable token sequence, the tiny GPT the unit
// tests train (seconds per run), and ranks as threads over LocalBackend (local_backend.h), each
// running one Trainer and handing back its parameters, result and last progress report.
//
//   auto ranks = test::trainRanks(2, test::tinyGptConfig(path));
//   ASSERT_TRUE(ranks[0].status.isOk()) << ranks[0].status;
//
// Thread model: trainRanks blocks until every rank's thread has finished; the rest are plain
// functions.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/model/trainable_model.h"
#include "worker/training/trainer.h"

namespace ddp::test {

using Params = std::vector<std::vector<float>>;

inline constexpr int kGptVocab = 16;

// n tokens of a learnable sequence: next = (3 prev + 1) mod 16, one token in ten drawn at random.
std::vector<int32_t> markovTokens(int64_t n, uint64_t seed);

// A 1-layer GPT (vocabulary 16, context 8, 2 heads, width 16) on the token file `trainPath`:
// batch 8, 20 steps, evaluation every 5, AdamW with a cosine schedule, weight decay on the
// linear weights only.
runtime::TrainerConfig tinyGptConfig(const std::string& trainPath);

struct RankRun {
  Params params;                        // after run() (empty when it failed)
  runtime::TrainResult result;
  Status status;                        // create()'s or run()'s error
  runtime::TrainingProgress progress;   // the last progress report
  std::shared_ptr<const runtime::TrainingData> data;  // what the trainer trained on
};

// Runs `config` on `world` local ranks (io.progress is silenced; io.onProgress is replaced).
std::vector<RankRun> trainRanks(int world, const runtime::TrainerConfig& config, runtime::TrainerIo io = {});

// The runs of a stop-and-resume check: `config` on 2 ranks uninterrupted (reference); again with
// a checkpoint every 4 steps in `checkpointDir`, stopped during step 7 (first); and once more,
// resuming from that checkpoint (resumed). The caller asserts on them.
struct ResumeRuns {
  std::vector<RankRun> reference, first, resumed;
};
ResumeRuns stopAndResume(runtime::TrainerConfig config, const std::string& checkpointDir);

Params copyParams(model::TrainableModel& m);
bool bitwiseEqual(const Params& a, const Params& b);
float maxAbsDiff(const Params& a, const Params& b);

}  // namespace ddp::test
