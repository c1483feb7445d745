#include "worker/runtime/worker_entry.h"

#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/log.h"
#include "common/thread_priority.h"
#include "kernels/layer_ops.h"
#include "worker/comm/gloo_backend.h"
#include "common/store/http_store_client.h"
#include "worker/comm/nccl_backend.h"
#include "common/store/prefix_store.h"
#include "worker/comm/process_group.h"
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

// spec.device cuda: this rank's GPU is cuda:(rank mod visible devices): one GPU per rank on a
// multi-GPU host with ranks numbered per host in order, and cuda:0 in a pod that sees one GPU.
Status pickCudaDevice(int rank, TrainerConfig* config) {
  if (!comm::ncclBackendAvailable()) {
    return unimplemented("spec.device: cuda is not available: this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
  }
  const int count = kernels::cudaDeviceCount();
  if (count == 0) {
    return unavailable("spec.device: cuda: no CUDA device is visible to rank " + std::to_string(rank) +
                       " (wanted cuda:0; check the GPU, its driver and CUDA_VISIBLE_DEVICES)");
  }
  config->device = Device::cuda(rank % count);
  return Status::ok();
}

// Gloo for every rank; with spec.device cuda also NCCL on the rank's GPU, both behind one
// ProcessGroup (host buffers -> Gloo, device buffers -> NCCL). Both rendezvous in `store`.
Result<std::unique_ptr<comm::Backend>> buildBackend(const WorkerConfig& wc, const JobSpec& spec,
                                                    const TrainerConfig& tc, comm::Store& store) {
  comm::GlooOptions gloo;
  gloo.rank = wc.rank;
  gloo.size = wc.worldSize;
  gloo.prefix = "gloo";
  gloo.timeout = tc.collectiveTimeout;
  gloo.connectTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(spec.timeouts.rendezvousSeconds));
  DDP_ASSIGN_OR_RETURN(auto glooBackend, comm::GlooBackend::create(gloo, store));
  if (tc.device.isCpu()) return std::unique_ptr<comm::Backend>(std::move(glooBackend));
  comm::NcclOptions nccl;
  nccl.rank = wc.rank;
  nccl.size = wc.worldSize;
  nccl.device = tc.device.index;
  nccl.prefix = "nccl";
  nccl.timeout = tc.collectiveTimeout;
  nccl.connectTimeout = gloo.connectTimeout;
  auto ncclBackend = comm::createNcclBackend(nccl, store);
  if (!ncclBackend.isOk()) return ncclBackend.status().withContext("nccl on " + tc.device.toString());
  std::vector<std::unique_ptr<comm::Backend>> members;
  members.push_back(std::move(glooBackend));
  members.push_back(std::move(*ncclBackend));
  DDP_ASSIGN_OR_RETURN(auto group, comm::ProcessGroup::create(std::move(members)));
  return std::unique_ptr<comm::Backend>(std::move(group));
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
  // Note [Comm thread priority]: the job's choice, unless the environment overrides it.
  if (const char* env = std::getenv("DDP_COMM_THREAD_PRIORITY"); env == nullptr || *env == '\0') {
    setCommThreadPriority(spec->commThreadPriority);
  }
  auto trainerConfig = trainerConfigFromJobSpec(*spec);
  if (!trainerConfig.isOk()) return fail(trainerConfig.status().withContext(config->jobFile), kWorkerExitBadConfig);
  if (!config->checkpointDirOverride.empty()) trainerConfig->checkpointDir = config->checkpointDirOverride;
  if (trainerConfig->device.isCuda()) {
    // Before any rendezvous: a worker without a usable GPU fails alone and at once.
    if (Status st = pickCudaDevice(config->rank, &*trainerConfig); !st.isOk()) {
      return fail(st, st.code() == StatusCode::kUnimplemented ? kWorkerExitBadConfig : kWorkerExitFailure);
    }
  }

  auto client = comm::HttpStoreClient::connect(config->storeHost + ":" + std::to_string(config->storePort));
  if (!client.isOk()) return fail(client.status().withContext("store"), kWorkerExitFailure);
  comm::PrefixStore store(comm::PrefixStore::jobGenerationPrefix(trainerConfig->job, config->generation), **client);

  auto backend = buildBackend(*config, *spec, *trainerConfig, store);
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
