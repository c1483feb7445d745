#include "worker/control/worker_entry.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/log.h"
#include "common/store/http_store_client.h"
#include "kernels/layer_ops.h"
#include "worker/comm/flight_recorder.h"
#include "worker/comm/gloo_abort_self_test.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/nccl_backend.h"
#include "worker/comm/process_group.h"
#include "worker/control/controller_client.h"
#include "worker/control/heartbeat_reporter.h"
#include "worker/control/pod_supervisor.h"
#include "worker/training/job_spec_adapter.h"
#include "worker/control/stop_signal.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"
#include "worker/training/training_setup.h"
#include "worker/control/worker_config.h"

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

// Note [Worker generations]
// A worker process lives through generations of its job: register -> assignment (rank, world
// size, generation, spec) -> store of that generation -> backend -> trainer (which loads the
// last committed checkpoint) -> train. When a generation ends on a fault it does not exit:
//  - the controller ended it (a verdict: `abort` in answer to a heartbeat; the reporter aborts
//    the backend, so a collective this rank is blocked in fails at once), or
//  - a collective failed here (a peer went away, the collective deadline passed: the backend
//    aborted itself, which also fails the peers' waits at once);
// then the worker tears down in this order: abort the backend (peers blocked on this rank fail
// fast), stop the reducer's comm thread, keep this rank's state at its last step for the next
// generation (Note [Healing from live peers]), destroy the backend (joining its threads: one
// may still be inside a Gloo op that writes into the trainer's buffers after its Work already
// failed), drop the trainer, destroy the store client; and registers again saying which generation it
// left and why (the controller's hang detector takes that as the CollectiveFailed report, or
// finds the real cause: Note [Hang verdicts]). It then waits for an assignment of a later
// generation, and trains again. The data set stays loaded across generations.
// It exits instead when no restart can help: a bad configuration (status 2), a stop (SIGTERM
// or the controller's `stop`: 0 after checkpointing), the controller lost for
// spec.timeouts.controllerSeconds or a 410 (fenced: a newer generation went on without it),
// or the job finished while it waited (0 when it Succeeded or was Cancelled).

// How a generation ends on this worker: exit status and its last heartbeat, or a rejoin.
struct Outcome {
  int exitCode = kWorkerExitOk;
  WorkerState state = WorkerState::kSucceeded;
  std::string message;
  bool rejoin = false;  // a recoverable fault: register again for the next generation
};

Outcome rejoinAfter(const Status& st) {
  DDP_LOG(Warning) << "this generation ended: " << st.toString() << "; rejoining";
  return {kWorkerExitFailure, WorkerState::kFailed, st.message(), true};
}

Outcome failed(const Status& st, int code) {
  DDP_LOG(Error) << st.toString();
  return {code, WorkerState::kFailed, st.message()};
}

// Failures no restart can fix: the job fails at once (exit kWorkerExitBadConfig) with the reason
// instead of using every restart on them: a bad spec or file, a missing capability, a checkpoint
// directory that belongs to another job or cannot be written (PermissionDenied), memory the
// model cannot get (ResourceExhausted).
bool isConfigError(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented:
    case StatusCode::kPermissionDenied:
    case StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// spec.device cuda: this rank's GPU is cuda:<local rank> in a pod of several ranks (Note
// [Several ranks per pod]), else cuda:(rank mod visible devices): one GPU per rank on a
// multi-GPU host with ranks numbered per host in order, and cuda:0 in a pod that sees one GPU.
Status pickCudaDevice(int rank, std::optional<int> localRank, TrainerConfig* config) {
  if (!comm::ncclBackendAvailable()) {
    return unimplemented("spec.device: cuda is not available: this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
  }
  const int count = kernels::cudaDeviceCount();
  if (count == 0) {
    return unavailable("spec.device: cuda: no CUDA device is visible to rank " + std::to_string(rank) +
                       " (wanted cuda:0; check the GPU, its driver and CUDA_VISIBLE_DEVICES)");
  }
  if (localRank && *localRank >= count) {
    return unavailable("spec.device: cuda: local rank " + std::to_string(*localRank) + " of its pod wants cuda:" +
                       std::to_string(*localRank) + " but " + std::to_string(count) +
                       " CUDA devices are visible (the pod's nvidia.com/gpu must be spec.workers.perPod)");
  }
  config->device = Device::cuda(localRank ? *localRank : rank % count);
  return Status::ok();
}

struct BuiltBackend {
  std::unique_ptr<comm::Backend> backend;
  const comm::FlightRecorder* glooFlight = nullptr;  // owned by `backend`
};

// Gloo for every rank; with spec.device cuda also NCCL on the rank's GPU, both behind one
// ProcessGroup (host buffers -> Gloo, device buffers -> NCCL). Both rendezvous in `store`.
// Gloo's pairs bind to and advertise config.advertiseAddress (DDP_ADVERTISE_ADDR): the address the
// peers reach this worker on.
Result<BuiltBackend> buildBackend(const Assignment& a, const JobSpec& spec, const TrainerConfig& tc,
                                  const WorkerConfig& config, comm::Store& store) {
  comm::GlooOptions gloo;
  gloo.rank = a.rank;
  gloo.hostname = config.advertiseAddress;
  gloo.sameHostMemory = config.sameHostMemory;
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

// The last issued and the oldest unfinished collective in `recorder` (what the heartbeat's
// "collectives" lists; the controller's hang detector compares them across ranks). The NCCL
// backend keeps its recorder private, so only Gloo's is reported.
HeartbeatReporter::CollectivesFn collectivesOf(const comm::FlightRecorder& recorder, std::string backend) {
  return [&recorder, backend = std::move(backend)] {
    CollectiveView c;
    c.backend = backend;
    const TimePoint now = SystemClock::instance().now();
    for (const comm::FlightRecord& r : recorder.snapshot()) {
      c.issued = std::max(c.issued, static_cast<int64_t>(r.seq));
      if (c.seq >= 0 || (r.state != comm::FlightState::kQueued && r.state != comm::FlightState::kRunning)) continue;
      c.seq = static_cast<int64_t>(r.seq);
      c.op = r.op;
      c.bytes = static_cast<int64_t>(r.bytes);
      c.seconds = std::chrono::duration<double>(now - r.issued).count();
    }
    return std::vector<CollectiveView>{c};
  };
}

// Every op `recorder` still holds, ages relative to now (the `flightRecord` command's answer).
HeartbeatReporter::FlightRecordFn flightRecordOf(const comm::FlightRecorder& recorder, std::string backend) {
  return [&recorder, backend = std::move(backend)] {
    const TimePoint now = SystemClock::instance().now();
    auto ago = [now](TimePoint t) { return t == TimePoint{} ? -1.0 : std::chrono::duration<double>(now - t).count(); };
    std::vector<FlightOp> out;
    for (const comm::FlightRecord& r : recorder.snapshot()) {
      out.push_back({backend, static_cast<int64_t>(r.seq), r.op, static_cast<int64_t>(r.bytes),
                     comm::flightStateName(r.state), ago(r.issued), ago(r.started), ago(r.ended)});
    }
    return out;
  };
}

// Disconnects the reporter from the backend (collectives source, flight record source, abort
// target) before the backend is destroyed.
struct DisconnectReporter {
  HeartbeatReporter& reporter;
  void now() {
    reporter.setCollectivesSource({});
    reporter.setFlightRecordSource({});
    reporter.setAbortTarget({});
  }
  ~DisconnectReporter() { now(); }
};

LogFormat logFormatOf(const WorkerConfig& config, const JobSpec& spec) {
  return config.logFormat.value_or(spec.logFormat == JobLogFormat::kJson ? LogFormat::kJson : LogFormat::kHuman);
}

// Note [Injected faults] (training_faults.h): this rank's faults in this generation, from the
// DDP_TEST_* variables; a malformed one is logged and no fault is injected.
TrainingFaults injectedFaults(const Assignment& a) {
  Result<TrainingFaults> faults = trainingFaultsFromEnv(processEnv(), a.rank, a.generation);
  if (faults.isOk()) return *faults;
  DDP_LOG(Warning) << "fault injection ignored: " << faults.status().message();
  return TrainingFaults();
}

// What this generation's trainer reads and reports through: progress lines, the stop and
// checkpoint-now flags, the heartbeat reporter, the data set already loaded and (Note [Healing
// from live peers]) this worker's state from its last generation, if any.
TrainerIo generationIo(const WorkerConfig& config, const JobSpec& spec, HeartbeatReporter& reporter,
                       const std::atomic<bool>& stop, std::shared_ptr<const TrainingData> data,
                       const std::optional<PeerState>& carried, const WorkerParts& parts) {
  TrainerIo io;
  io.loadData = parts.loadData;
  io.buildModel = parts.buildModel;
  io.progress = stdout;
  io.format = logFormatOf(config, spec);
  io.stop = &stop;
  io.checkpointNow = &reporter.checkpointRequested();
  io.onProgress = [&reporter](const TrainingProgress& p) { reporter.publish(p); };
  io.data = std::move(data);
  io.exchangePeerState = true;
  io.peerState = carried.has_value() ? &*carried : nullptr;
  return io;
}

// Reads the data set on another thread while the backend connects (a process's first generation).
std::future<Result<std::shared_ptr<const TrainingData>>> prefetchData(const TrainerConfig& tc, const WorkerParts& parts) {
  return std::async(std::launch::async, [&tc, &parts]() -> Result<std::shared_ptr<const TrainingData>> {
    if (parts.loadData) return parts.loadData(tc);
    DDP_ASSIGN_OR_RETURN(TrainingData loaded, loadTrainingData(tc));
    return std::make_shared<const TrainingData>(std::move(loaded));
  });
}

// The teardown of a failed generation, in order (Note [Worker generations]); returns this rank's
// state at its last step boundary for the next generation.
std::optional<PeerState> tearDownFailedGeneration(std::unique_ptr<Trainer> trainer,
                                                  std::unique_ptr<comm::Backend> backend,
                                                  DisconnectReporter& disconnect, int64_t generation) {
  trainer->stopCommunication();
  std::optional<PeerState> mine = trainer->peerState();
  if (mine) mine->generation = generation;
  // The next generation's rank 0 may be another process: it must not wait for this one's
  // teardown to take the checkpoint directory.
  trainer->releaseCheckpointDirectory();
  disconnect.now();
  backend.reset();
  trainer.reset();
  return mine;
}

// Store -> backend -> trainer -> run, for one generation (Note [Worker generations]). The
// reporter is already running. `data` carries the loaded data set from one generation to the next.
Outcome train(const WorkerConfig& config, const ControllerClient& client, const Assignment& a, const JobSpec& spec,
              const TrainerConfig& tc, HeartbeatReporter& reporter, const std::atomic<bool>& stop,
              std::shared_ptr<const TrainingData>* data, std::optional<PeerState>* carried,
              const WorkerParts& parts) {
  // Fatal causes first: the reporter gave up on the controller (lost, fenced), or a stop.
  auto fatalOr = [&](const Status& st, int code) -> Outcome {
    if (Status why = reporter.fatalStatus(); !why.isOk()) {
      DDP_LOG(Error) << st.toString();
      return failed(why, kWorkerExitFailure);
    }
    if (code == kWorkerExitBadConfig || stop.load()) return failed(st, code);
    return rejoinAfter(st);
  };
  // A process's first generation (a new or replacement worker) reads its data set while the
  // backend connects: on a replacement that load is most of the time the survivors wait.
  std::future<Result<std::shared_ptr<const TrainingData>>> prefetch;
  if (!*data) prefetch = prefetchData(tc, parts);
  // The server namespaces the keys per job and generation; Gloo and NCCL prefix their own.
  auto store = comm::HttpStoreClient::connect(client.storeAddress(), client.storeOptions(a.generation));
  if (!store.isOk()) return fatalOr(store.status().withContext("store"), kWorkerExitFailure);
  auto built = buildBackend(a, spec, tc, config, **store);
  if (!built.isOk()) return fatalOr(built.status().withContext("rendezvous"), kWorkerExitFailure);
  comm::Backend& backend = *built->backend;
  reporter.setCollectivesSource(collectivesOf(*built->glooFlight, "gloo"));
  reporter.setFlightRecordSource(flightRecordOf(*built->glooFlight, "gloo"));
  reporter.setAbortTarget([&backend](const Status& why) { backend.abort(why); });
  DisconnectReporter disconnect{reporter};

  if (prefetch.valid()) {
    // A failed load is left to the trainer, which loads again and reports it as it always does.
    if (auto loaded = prefetch.get(); loaded.isOk()) *data = std::move(*loaded);
  }
  TrainerIo io = generationIo(config, spec, reporter, stop, *data, *carried, parts);
  // Checkpoints are committed by the controller (Note [Two-phase checkpoint commit]).
  const std::unique_ptr<CheckpointChannel> checkpointChannel = client.checkpointChannel(a.generation);
  io.checkpointChannel = checkpointChannel.get();
  const TrainingFaults faults = injectedFaults(a);
  io.faults = &faults;
  auto trainer = Trainer::create(tc, backend, io);
  if (!trainer.isOk()) {
    if (trainer.status().code() != StatusCode::kAborted) backend.abort(trainer.status());
    return fatalOr(trainer.status(), isConfigError(trainer.status()) ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  *data = (*trainer)->data();
  auto result = (*trainer)->run();
  if (!result.isOk()) {
    // Peers blocked on us fail fast instead of waiting for their timeouts. An Aborted status
    // (the controller's abort, Join throw mode, a peer's abort) is already known to every rank.
    if (result.status().code() != StatusCode::kAborted) backend.abort(result.status());
    const bool aborted = backend.isAborted();
    // Teardown in order (Note [Worker generations]): the reducer's comm thread stops; this rank's
    // state at its last step boundary goes to the next generation; the checkpoint directory is
    // let go; the backend goes BEFORE the trainer, because its destructor joins the threads
    // that may still be inside a Gloo op that writes into the trainer's buffers (an aborted op's
    // Work completes at once, the thread in the library only when the library returns); then
    // the trainer goes.
    std::optional<PeerState> mine =
        tearDownFailedGeneration(std::move(*trainer), std::move(built->backend), disconnect, a.generation);
    if (mine) *carried = std::move(mine);
    // An Aborted status with the communicator intact is an outcome every rank agreed on (Join's
    // throwOnEarlyTermination): no restart would change it.
    if (!aborted && !reporter.abortCommanded()) return failed(result.status(), kWorkerExitFailure);
    return fatalOr(result.status(), isConfigError(result.status()) ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  // Controller lost or fenced: the reporter stopped training; that is the cause to report.
  if (Status why = reporter.fatalStatus(); !why.isOk()) return failed(why, kWorkerExitFailure);
  if (result->stopped) {
    return {kWorkerExitOk, WorkerState::kStopped,
            reporter.stopCommanded() ? "stopped by the controller" : "stopped on request (signal)"};
  }
  return {kWorkerExitOk, WorkerState::kSucceeded, ""};
}

// A failure before the reporter runs still tells the controller (one heartbeat, best effort).
int reportEarlyFailure(const ControllerClient& client, const WorkerConfig& config, const Assignment& a,
                       const Status& st, int code) {
  Heartbeat r;
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
  if (tc.device.isCuda()) DDP_RETURN_IF_ERROR(pickCudaDevice(rank, config.localRank, &tc));
  return tc;
}

// One generation: spec, heartbeats, training; the last heartbeat unless the worker rejoins.
// Returns the exit status, or nullopt to rejoin (`why` says why).
std::optional<int> runGeneration(const WorkerConfig& config, const ControllerClient& client, const Assignment& a,
                                 const std::atomic<bool>& stop, bool abortReliable,
                                 std::shared_ptr<const TrainingData>* data, std::optional<PeerState>* carried,
                                 std::string* why, Duration* rejoinTimeout, const WorkerParts& parts) {
  auto spec = jobSpecOfAssignment(a.specSchema, a.specYaml);  // Note [Validated once]
  if (!spec.isOk()) {
    return reportEarlyFailure(client, config, a, spec.status().withContext("the spec of the controller's assignment"),
                              kWorkerExitBadConfig);
  }
  *rejoinTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(spec->timeouts.rendezvousSeconds));
  auto tc = trainerConfigFor(config, *spec, a.rank);
  if (!tc.isOk()) {
    return reportEarlyFailure(client, config, a, tc.status(),
                              isConfigError(tc.status()) ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  HeartbeatReporterOptions ho = HeartbeatReporterOptions::fromSpec(spec->timeouts);
  ho.workerId = config.workerId;
  ho.rank = a.rank;
  ho.generation = a.generation;
  if (!abortReliable) ho.ext["abortUnreliable"] = 1;
  auto reporter = HeartbeatReporter::create(client, ho, [] { requestStop(); });
  if (!reporter.isOk()) return reportEarlyFailure(client, config, a, reporter.status(), kWorkerExitBadConfig);
  (*reporter)->start();  // Running at step 0 while the rendezvous happens
  const Outcome outcome = train(config, client, a, *spec, *tc, **reporter, stop, data, carried, parts);
  if (outcome.rejoin) {
    (*reporter)->stop();
    *why = outcome.message;
    return std::nullopt;
  }
  (void)(*reporter)->finish(outcome.state, outcome.message, Deadline::after(kFinalHeartbeatTimeout));
  return outcome.exitCode;
}

// The exit status for a worker whose job finished while it was joining (Note [Job finished]).
std::optional<int> finishedJobExit(const Status& st) {
  auto state = jobFinished(st);
  if (!state) return std::nullopt;
  DDP_LOG(Info) << "the job is finished (" << *state << "): nothing to do";
  return *state == "Succeeded" || *state == "Cancelled" ? kWorkerExitOk : kWorkerExitFailure;
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

int runWorker(int argc, char** argv, const WorkerParts& parts) {
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
  if (!config->podWorkerIds.empty()) {  // Note [Several ranks per pod]
    log::setPrefix("[" + config->jobName + " pod]");
    PodSupervisorOptions so;
    so.program = "/proc/self/exe";
    so.args = args;
    so.environment = processEnvironment();
    so.workerIds = config->podWorkerIds;
    return superviseRanks(so);
  }
  log::setPrefix("[" + config->jobName + " " + config->workerId + "]");

  ControllerClientOptions co;
  co.url = config->controllerUrl;
  co.job = config->jobName;
  co.token = config->jobToken;
  co.workerId = config->workerId;
  auto client = ControllerClient::create(co);
  if (!client.isOk()) return fail(client.status(), kWorkerExitBadConfig);

  // In-process recovery needs an abort that releases a blocked collective (Note [Abort
  // self-test]); when it does not, the controller hears it in every heartbeat. It runs while the
  // worker joins (a replacement's round closes as soon as it registers).
  std::future<comm::AbortSelfTestResult> selfTestRun =
      std::async(std::launch::async, [] { return comm::runGlooAbortSelfTest(); });  // logs its result
  auto assignment = joinJob(**client, *config);
  if (!assignment.isOk()) {
    if (auto code = finishedJobExit(assignment.status())) return *code;
    const bool refused = assignment.status().code() == StatusCode::kFailedPrecondition;  // 401: the token
    return fail(assignment.status().withContext("joining the job"), refused ? kWorkerExitBadConfig : kWorkerExitFailure);
  }
  const comm::AbortSelfTestResult selfTest = selfTestRun.get();
  std::shared_ptr<const TrainingData> data;
  std::optional<PeerState> carried;  // Note [Healing from live peers]
  for (;;) {  // Note [Worker generations]
    log::setPrefix(config->jobName, assignment->rank);
    DDP_LOG(Info) << "rank " << assignment->rank << " of " << assignment->worldSize << " in generation "
                  << assignment->generation;
    std::string why;
    Duration rejoinTimeout = kAssignmentTimeout;
    if (auto code = runGeneration(*config, **client, *assignment, stop, selfTest.reliable, &data, &carried, &why,
                                  &rejoinTimeout, parts)) {
      return *code;
    }
    const int64_t left = assignment->generation;
    const Deadline deadline = Deadline::after(rejoinTimeout);
    // Note [Recovery figures]: where this rank stopped (its state at its last step boundary).
    const int64_t lastStep = carried.has_value() && carried->generation == left ? carried->step : -1;
    auto reg = (*client)->registerWorker(hostName(), config->advertiseAddress, ::getpid(), deadline,
                                         Rejoin{left, why, lastStep});
    if (!reg.isOk()) {
      if (auto code = finishedJobExit(reg.status())) return *code;
      return fail(reg.status().withContext("rejoining after generation " + std::to_string(left)), kWorkerExitFailure);
    }
    assignment = (*client)->awaitAssignment(deadline, left);
    if (!assignment.isOk()) {
      if (auto code = finishedJobExit(assignment.status())) return *code;
      return fail(assignment.status().withContext("rejoining after generation " + std::to_string(left)),
                  kWorkerExitFailure);
    }
  }
}

}  // namespace ddp::runtime
