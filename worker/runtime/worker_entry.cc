#include "worker/runtime/worker_entry.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/log.h"
#include "common/store/http_store_client.h"
#include "kernels/layer_ops.h"
#include "worker/comm/flight_recorder.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/nccl_backend.h"
#include "worker/comm/process_group.h"
#include "worker/runtime/controller_client.h"
#include "worker/runtime/heartbeat_reporter.h"
#include "worker/runtime/job_spec_adapter.h"
#include "worker/runtime/stop_signal.h"
#include "worker/runtime/trainer.h"
#include "worker/runtime/worker_config.h"

namespace ddp::runtime {
namespace {

// Bound of registration (the controller may still be starting).
constexpr Duration kRegisterTimeout = std::chrono::seconds(60);
// Bound of the wait for the rendezvous round to close. The spec (and its timeouts) comes with
// the assignment, so this bound cannot come from it.
constexpr Duration kAssignmentTimeout = std::chrono::seconds(600);

int fail(const Status& st, int code) {
  DDP_LOG(Error) << st.toString();
  return code;
}

// How a worker that got its assignment ends: exit status and its last heartbeat.
struct Outcome {
  int exitCode = kWorkerExitOk;
  WorkerState state = WorkerState::kSucceeded;
  std::string message;
};

Outcome failed(const Status& st, int code) {
  DDP_LOG(Error) << st.toString();
  return {code, WorkerState::kFailed, st.message()};
}

bool isConfigError(const Status& st) {
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound ||
         st.code() == StatusCode::kUnimplemented;
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
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

struct BuiltBackend {
  std::unique_ptr<comm::Backend> backend;
  const comm::FlightRecorder* glooFlight = nullptr;  // owned by `backend`
};

// Gloo for every rank; with spec.device cuda also NCCL on the rank's GPU, both behind one
// ProcessGroup (host buffers -> Gloo, device buffers -> NCCL). Both rendezvous in `store`.
Result<BuiltBackend> buildBackend(const Assignment& a, const JobSpec& spec, const TrainerConfig& tc, comm::Store& store) {
  comm::GlooOptions gloo;
  gloo.rank = a.rank;
  gloo.size = a.worldSize;
  gloo.prefix = "gloo";
  gloo.timeout = tc.collectiveTimeout;
  gloo.commThreadPriority = tc.commThreadPriority;
  gloo.connectTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(spec.timeouts.rendezvousSeconds));
  DDP_ASSIGN_OR_RETURN(auto glooBackend, comm::GlooBackend::create(gloo, store));
  BuiltBackend built;
  built.glooFlight = &glooBackend->flightRecorder();
  if (tc.device.isCpu()) {
    built.backend = std::move(glooBackend);
    return built;
  }
  comm::NcclOptions nccl;
  nccl.rank = a.rank;
  nccl.size = a.worldSize;
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
  built.backend = std::move(group);
  return built;
}

// The oldest unfinished collective in `recorder` (what the heartbeat's "collectives" lists).
// The NCCL backend keeps its recorder private, so only Gloo's is reported.
HeartbeatReporter::CollectivesFn oldestUnfinished(const comm::FlightRecorder& recorder, std::string backend) {
  return [&recorder, backend = std::move(backend)] {
    std::vector<CollectiveInFlight> out;
    const TimePoint now = SystemClock::instance().now();
    for (const comm::FlightRecord& r : recorder.snapshot()) {
      if (r.state != comm::FlightState::kQueued && r.state != comm::FlightState::kRunning) continue;
      out.push_back({backend, static_cast<int64_t>(r.seq), r.op, static_cast<int64_t>(r.bytes),
                     std::chrono::duration<double>(now - r.issued).count()});
      break;
    }
    return out;
  };
}

// Clears the reporter's collectives source before the backend it reads is destroyed.
struct ClearCollectivesSource {
  HeartbeatReporter& reporter;
  ~ClearCollectivesSource() { reporter.setCollectivesSource({}); }
};

LogFormat logFormatOf(const WorkerConfig& config, const JobSpec& spec) {
  return config.logFormat.value_or(spec.logFormat == JobLogFormat::kJson ? LogFormat::kJson : LogFormat::kHuman);
}

// Store -> backend -> trainer -> run. The reporter is already running.
Outcome train(const WorkerConfig& config, const ControllerClient& client, const Assignment& a, const JobSpec& spec,
              const TrainerConfig& tc, HeartbeatReporter& reporter, const std::atomic<bool>& stop) {
  // The server namespaces the keys per job and generation; Gloo and NCCL prefix their own.
  auto store = comm::HttpStoreClient::connect(client.storeAddress(), client.storeOptions(a.generation));
  if (!store.isOk()) return failed(store.status().withContext("store"), kWorkerExitFailure);
  auto built = buildBackend(a, spec, tc, **store);
  if (!built.isOk()) return failed(built.status().withContext("rendezvous"), kWorkerExitFailure);
  comm::Backend& backend = *built->backend;
  reporter.setCollectivesSource(oldestUnfinished(*built->glooFlight, "gloo"));
  ClearCollectivesSource clearSource{reporter};

  TrainerIo io;
  io.progress = stdout;
  io.format = logFormatOf(config, spec);
  io.stop = &stop;
  io.onProgress = [&reporter](const TrainingProgress& p) { reporter.publish(p); };
  auto trainer = Trainer::create(tc, backend, io);
  if (!trainer.isOk()) {
    return failed(trainer.status(), isConfigError(trainer.status()) ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  auto result = (*trainer)->run();
  if (!result.isOk()) {
    // Peers blocked on us fail fast instead of waiting for their timeouts. An Aborted status
    // (Join throw mode, a peer's abort) is already known to every rank.
    if (result.status().code() != StatusCode::kAborted) backend.abort(result.status());
  }
  // Controller lost or fenced: the reporter stopped training; that is the cause to report.
  if (Status why = reporter.fatalStatus(); !why.isOk()) {
    if (!result.isOk()) DDP_LOG(Error) << result.status().toString();
    return failed(why, kWorkerExitFailure);
  }
  if (!result.isOk()) return failed(result.status(), kWorkerExitFailure);
  if (result->stopped) {
    return {kWorkerExitOk, WorkerState::kStopped,
            reporter.stopCommanded() ? "stopped by the controller" : "stopped on request (signal)"};
  }
  return {kWorkerExitOk, WorkerState::kSucceeded, ""};
}

// A failure before the reporter runs still tells the controller (one heartbeat, best effort).
int reportEarlyFailure(const ControllerClient& client, const WorkerConfig& config, const Assignment& a,
                       const Status& st, int code) {
  HeartbeatReport r;
  r.workerId = config.workerId;
  r.rank = a.rank;
  r.state = WorkerState::kFailed;
  r.message = st.message();
  (void)client.heartbeat(a.generation, r, Deadline::after(kFinalHeartbeatTimeout));
  return fail(st, code);
}

Result<TrainerConfig> trainerConfigFor(const WorkerConfig& config, const JobSpec& spec, int rank) {
  DDP_ASSIGN_OR_RETURN(TrainerConfig tc, trainerConfigFromJobSpec(spec));
  if (!config.checkpointDirOverride.empty()) tc.checkpointDir = config.checkpointDirOverride;
  if (config.commThreadPriority) tc.commThreadPriority = *config.commThreadPriority;  // Note [Comm thread priority]
  // Before any rendezvous: a worker without a usable GPU fails alone and at once.
  if (tc.device.isCuda()) DDP_RETURN_IF_ERROR(pickCudaDevice(rank, &tc));
  return tc;
}

// From the assignment to the exit status: spec, heartbeats, training, the last heartbeat.
int runAssignment(const WorkerConfig& config, const ControllerClient& client, const Assignment& a,
                  const std::atomic<bool>& stop) {
  auto spec = parseJobSpec(a.specYaml);  // workers never read a job file
  if (!spec.isOk()) {
    return reportEarlyFailure(client, config, a, spec.status().withContext("the spec of the controller's assignment"),
                              kWorkerExitBadConfig);
  }
  auto tc = trainerConfigFor(config, *spec, a.rank);
  if (!tc.isOk()) {
    return reportEarlyFailure(client, config, a, tc.status(),
                              isConfigError(tc.status()) ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  HeartbeatReporterOptions ho = HeartbeatReporterOptions::fromSpec(spec->timeouts);
  ho.workerId = config.workerId;
  ho.rank = a.rank;
  ho.generation = a.generation;
  auto reporter = HeartbeatReporter::create(client, ho, [] { requestStop(); });
  if (!reporter.isOk()) return reportEarlyFailure(client, config, a, reporter.status(), kWorkerExitBadConfig);
  (*reporter)->start();  // Running at step 0 while the rendezvous happens
  const Outcome outcome = train(config, client, a, *spec, *tc, **reporter, stop);
  (void)(*reporter)->finish(outcome.state, outcome.message, Deadline::after(kFinalHeartbeatTimeout));
  return outcome.exitCode;
}

// Registration and the rendezvous assignment.
Result<Assignment> joinJob(const ControllerClient& client, const WorkerConfig& config) {
  DDP_ASSIGN_OR_RETURN(Registration reg, client.registerWorker(hostName(), config.advertiseAddress, ::getpid(),
                                                               Deadline::after(kRegisterTimeout)));
  DDP_LOG(Info) << "registered with the controller at " << client.url() << " (generation " << reg.generation
                << "); waiting for the rendezvous";
  return client.awaitAssignment(Deadline::after(kAssignmentTimeout));
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
  log::setPrefix("[" + config->jobName + " " + config->workerId + "]");

  ControllerClientOptions co;
  co.url = config->controllerUrl;
  co.job = config->jobName;
  co.token = config->jobToken;
  co.workerId = config->workerId;
  auto client = ControllerClient::create(co);
  if (!client.isOk()) return fail(client.status(), kWorkerExitBadConfig);

  auto assignment = joinJob(**client, *config);
  if (!assignment.isOk()) {
    if (auto state = jobFinished(assignment.status())) {  // Note [Job finished]
      DDP_LOG(Info) << "the job is finished (" << *state << "): nothing to do";
      return *state == "Succeeded" || *state == "Cancelled" ? kWorkerExitOk : kWorkerExitFailure;
    }
    const bool refused = assignment.status().code() == StatusCode::kFailedPrecondition;  // 401: the token
    return fail(assignment.status().withContext("joining the job"), refused ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  log::setPrefix(config->jobName, assignment->rank);
  DDP_LOG(Info) << "rank " << assignment->rank << " of " << assignment->worldSize << " in generation "
                << assignment->generation;
  return runAssignment(*config, **client, *assignment, stop);
}

}  // namespace ddp::runtime
