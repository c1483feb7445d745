#pragma once
// The ddp-worker program (worker/main.cc only calls runWorker):
//   1. SIGTERM/SIGINT handlers first (a stop request is never fatal: stop_signal.h);
//   2. WorkerConfig from flags and environment (worker_config.h);
//   3. the JobSpec file -> TrainerConfig (job_spec_adapter.h);
//   4. HttpStoreClient -> PrefixStore("<job>/gen<generation>/") -> GlooBackend::create; with
//      spec.device cuda, the rank's GPU is cuda:(rank mod visible devices) and the backend is a
//      ProcessGroup of Gloo (host buffers: stop flag, evaluation sums, checkpoint control) and
//      NCCL on that GPU (gradient buckets, parameter broadcast); no visible GPU fails here with
//      a message naming the device;
//   5. Trainer: resume from the latest complete checkpoint, train, exit.
// Exit status: 0 finished or stopped on request (checkpoint written); 2 bad configuration;
// 1 any other failure (the error is logged on stderr first).
// Thread model: runs on the main thread.

namespace ddp::runtime {

inline constexpr int kWorkerExitOk = 0;
inline constexpr int kWorkerExitFailure = 1;
inline constexpr int kWorkerExitBadConfig = 2;

int runWorker(int argc, char** argv);

}  // namespace ddp::runtime
