#pragma once
// The worker program (ddp-worker, or a user's trainer through worker/control/run_worker.h):
//   1. SIGTERM/SIGINT handlers first (a stop request is never fatal: stop_signal.h);
//   2. WorkerConfig from the launcher's environment and flags (worker_config.h);
//   3. ControllerClient (controller_client.h): register, then long-poll for the rendezvous
//      assignment (rank, world size, generation, the validated spec as YAML); a job that is
//      already finished ends the worker here (exit 0 when it Succeeded or was Cancelled);
//   4. the assignment's spec -> TrainerConfig (job_spec_adapter.h); the comm thread priority is
//      the worker's setting, else the job's;
//   5. HeartbeatReporter started (heartbeat_reporter.h: Running at step 0 during rendezvous);
//   6. HttpStoreClient on the controller's store of this generation -> GlooBackend::create;
//      with spec.device cuda, the rank's GPU is cuda:(rank mod visible devices) and the backend
//      is a ProcessGroup of Gloo (host buffers: stop flag, evaluation sums, checkpoint control)
//      and NCCL on that GPU (gradient buckets, parameter broadcast); no visible GPU fails before
//      any rendezvous with a message naming the device;
//   7. Trainer (progress published to the reporter): resume from the latest complete
//      checkpoint, train; a `stop` command or SIGTERM checkpoints and stops;
//   8. the last heartbeat (Succeeded / Stopped / Failed + message), then exit.
// Exit status: 0 finished or stopped on request (checkpoint written), or the job was already
// finished well; 2 bad configuration (flags, environment, the spec, a refused token); 1 any
// other failure, the controller lost for spec.timeouts.controllerSeconds or this worker fenced
// included (the error is logged on stderr first).
// Thread model: runs on the main thread.

#include <functional>
#include <memory>

#include "common/protocol/vocabulary.h"
#include "common/status.h"
#include "worker/training/trainer.h"

namespace ddp::runtime {

inline constexpr int kWorkerExitOk = protocol::kWorkerExitOk;
inline constexpr int kWorkerExitFailure = protocol::kWorkerExitFailure;
inline constexpr int kWorkerExitBadConfig = protocol::kWorkerExitBadConfig;

// What a trainer built on the engine brings (the public form: worker/control/run_worker.h);
// an empty member: the built-in one. Both run on the training thread (the data set's load also on
// a helper thread while a new worker's backend connects: it must not touch globals unguarded).
struct WorkerParts {
  std::function<Result<std::shared_ptr<const TrainingData>>(const TrainerConfig&)> loadData;
  std::function<Result<std::unique_ptr<model::TrainableModel>>(const TrainerConfig&, const TrainingData&)> buildModel;
};

int runWorker(int argc, char** argv, const WorkerParts& parts = {});

}  // namespace ddp::runtime
