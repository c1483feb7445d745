#include "worker/runtime/worker_entry.h"

#include <cstdio>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/log.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/http_store_client.h"
#include "worker/comm/prefix_store.h"
#include "worker/runtime/job_spec_adapter.h"
#include "worker/runtime/stop_signal.h"
#include "worker/runtime/trainer.h"
#include "worker/runtime/worker_config.h"

namespace ddp::runtime {
namespace {

int fail(const Status& st, int code) {
  DDP_LOG(Error) << st.toString();
  return code;
}

}  // namespace

int runWorker(int argc, char** argv) {
  const std::atomic<bool>& stop = installStopSignalHandlers();
  std::vector<std::string> args(argv, argv + argc);
  auto config = parseWorkerConfig(args, processEnv());
  if (!config.isOk()) {
    if (config.status().code() == StatusCode::kNotFound) {  // --help
      std::fputs(config.status().message().c_str(), stdout);
      return kWorkerExitOk;
    }
    std::fprintf(stderr, "ddp-worker: %s\n", config.status().message().c_str());
    return kWorkerExitBadConfig;
  }
  log::setLevel(config->logLevel);

  std::vector<SpecError> errors;
  auto spec = loadJobSpecFile(config->jobFile, &errors);
  if (!spec.isOk()) return fail(spec.status().withContext(config->jobFile), kWorkerExitBadConfig);
  log::setPrefix(spec->name.empty() ? "job" : spec->name, config->rank);
  auto trainerConfig = trainerConfigFromJobSpec(*spec);
  if (!trainerConfig.isOk()) return fail(trainerConfig.status().withContext(config->jobFile), kWorkerExitBadConfig);
  if (!config->checkpointDirOverride.empty()) trainerConfig->checkpointDir = config->checkpointDirOverride;

  auto client = comm::HttpStoreClient::connect(config->storeHost + ":" + std::to_string(config->storePort));
  if (!client.isOk()) return fail(client.status().withContext("store"), kWorkerExitFailure);
  comm::PrefixStore store(comm::PrefixStore::jobGenerationPrefix(trainerConfig->job, config->generation), **client);

  comm::GlooOptions gloo;
  gloo.rank = config->rank;
  gloo.size = config->worldSize;
  gloo.prefix = "gloo";
  gloo.timeout = trainerConfig->collectiveTimeout;
  gloo.connectTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(spec->timeouts.rendezvousSeconds));
  auto backend = comm::GlooBackend::create(gloo, store);
  if (!backend.isOk()) return fail(backend.status().withContext("rendezvous"), kWorkerExitFailure);

  TrainerIo io;
  io.progress = stdout;
  io.format = config->logFormat;
  io.stop = &stop;
  auto trainer = Trainer::create(*trainerConfig, **backend, io);
  if (!trainer.isOk()) {
    const bool bad = trainer.status().code() == StatusCode::kInvalidArgument ||
                     trainer.status().code() == StatusCode::kNotFound ||
                     trainer.status().code() == StatusCode::kUnimplemented;
    return fail(trainer.status(), bad ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  auto result = (*trainer)->run();
  if (!result.isOk()) {
    // Peers blocked on us fail fast instead of waiting for their timeouts. An Aborted status
    // (Join throw mode, a peer's abort) is already known to every rank.
    if (result.status().code() != StatusCode::kAborted) (*backend)->abort(result.status());
    return fail(result.status(), kWorkerExitFailure);
  }
  return kWorkerExitOk;
}

}  // namespace ddp::runtime
