#pragma once
// ProgressReporter: the trainer's stdout, one line per event, human or JSON.
//
// Note [Progress line contract]
// JSON lines (--log-format json) are one object per line with an "event" field; fields are a
// contract for tools and tests:
//   {"event":"start","job":..,"workers":..,"model":..,"params":..,"steps":..,"epochs":..}
//   {"event":"resume","step":..,"epoch":..,"checkpoint":"<dir>"}
//   {"event":"step","step":..,"epoch":..,"loss":..,"accuracy":..,"lr":..,"samples_per_s":..,
//    "eta_s":..}
//   {"event":"eval","step":..,"epoch":..,"test_loss":..,"test_accuracy":..,"elapsed_s":..}
//    (language models also "val_loss" (= test_loss, per token) and "perplexity"; step lines
//    "tokens_per_s"; done lines "val_loss")
//   {"event":"checkpoint","step":..,"path":..,"seconds":..}  (committed; with the controller's
//    asynchronous commit also "stall_s", "write_s", "commit_s": Note [Asynchronous checkpoints])
//   {"event":"checkpoint_failed","step":..,"reason":".."}  (not committed; training goes on)
//   {"event":"stop","step":..,"reason":".."}           (SIGTERM: checkpointed and stopped)
//   {"event":"done","step":..,"epoch":..,"test_accuracy":..,"elapsed_s":..}
//   {"event":"summary","steps":..,"samples_per_s":..,"compute_s":..,"exposed_comm_s":..,
//    "hook_s":..,"optimizer_s":..,"data_s":..}   (JSON only: the step-time breakdown of this
//    rank over the steps run in this process; samples_per_s is global)
// loss/accuracy on step lines are means over the steps since the previous step line (this
// rank's samples); test_* are over the whole test set. Human lines carry the same numbers.
// Thread model: not thread-safe; the training thread only. Each line is one fwrite + fflush.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "worker/control/worker_config.h"

namespace ddp::runtime {

// Where an asynchronous checkpoint's time went (Note [Asynchronous checkpoints]).
struct CheckpointTimes {
  double stallSeconds = 0;   // the training thread: snapshot into memory
  double writeSeconds = 0;   // background: encode, write, fsync
  double commitSeconds = 0;  // rank 0: its report -> MANIFEST on disk (waits for every rank)
};

struct StepReport {
  int64_t step = 0;        // optimizer steps done
  int64_t totalSteps = 0;
  int epoch = 0;           // 1-based epoch in progress
  int epochs = 0;
  double loss = 0;
  double accuracy = 0;     // fraction
  double lr = 0;
  double samplesPerSecond = 0;  // global (all workers)
  double etaSeconds = 0;
  // Language models: global training tokens per second (shown instead of samples).
  std::optional<double> tokensPerSecond;
};

struct EvalReport {
  int64_t step = 0;
  int epoch = 0;
  double testLoss = 0;
  double testAccuracy = 0;  // fraction
  double elapsedSeconds = 0;
  // A language model's evaluation (no epochs): the loss is the validation loss per token, the
  // accuracy the next-token accuracy.
  bool languageModel = false;
};

class ProgressReporter {
 public:
  ProgressReporter(LogFormat format, std::FILE* out);

  void start(const std::string& job, int workers, const std::string& model, size_t params,
             int64_t steps, int epochs);
  void resume(int64_t step, int epoch, const std::string& checkpoint);
  void step(const StepReport& r);
  void eval(const EvalReport& r);
  void checkpoint(int64_t step, const std::string& path, double seconds);
  void checkpoint(int64_t step, const std::string& path, double seconds, const CheckpointTimes& times);
  void checkpointFailed(int64_t step, const std::string& reason);
  void stop(int64_t step, const std::string& reason);
  // `valLoss`: a language model's last validation loss (per token).
  void done(int64_t step, int epoch, double testAccuracy, double elapsedSeconds,
            std::optional<double> valLoss = std::nullopt);
  struct Summary {
    int64_t steps = 0;
    double samplesPerSecond = 0, compute = 0, exposedComm = 0, hook = 0, optimizer = 0, data = 0;
  };
  void summary(const Summary& s);

  // JSON string literal with escapes.
  static std::string jsonString(const std::string& s);

 private:
  void line(const std::string& text);
  LogFormat format_;
  std::FILE* out_;
};

}  // namespace ddp::runtime
