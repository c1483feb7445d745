// NcclBackend implementation (CUDA builds only). See nccl_backend.h for the Notes.
#include "worker/comm/nccl_backend.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "common/thread_priority.h"
#include "worker/comm/nccl_backend_abort.h"
#include "worker/comm/nccl_backend_impl.h"

// Note [NCCL abort deadline]
// ncclCommAbort can itself hang (NVIDIA/nccl#1462; also #992, #1777: commFree joining a proxy
// thread stuck in poll()), and it is called exactly when something is already wrong: from
// abort(), the watchdog, the poller's async-error check, a failed create() and a failed
// finalize in the destructor. A hung abort would wedge the worker with no one to notice, so
// every call goes through Impl::abortComm: ncclCommAbort runs on a helper thread (with its own
// DeviceGuard: the current device is per thread) and the caller waits for it up to
// NcclOptions::abortTimeout (runAbortUnderDeadline in nccl_backend_abort.h, which every build
// compiles and tests/unit/comm/nccl_backend_test.cc runs with a fake abort that never returns).
// The helper is detached, unlike every other thread of the project (whose owners stop and join
// them): joining a hung abort is the very hang being bounded. It shares nothing with the backend
// but the communicator handle, the device ordinal and shared_ptrs to its completion flag and
// result, so it may finish (or never finish) after the backend is gone. If the abort has not returned in time, options.onAbortHung gets a message naming the
// communicator and the seconds waited; the default logs it and std::_Exit(kWorkerExitAbortHung):
// NCCL state wedged inside the process cannot be recovered there, and a worker that exits is
// replaced (and its peers see it go) instead of hanging. A callback that returns (tests) lets
// the abort go on without the communicator, which is leaked. The caller holds commMu while it
// waits, as it did around the direct call, so nothing else touches the handle meanwhile. Should
// no thread be available (std::system_error), ncclCommAbort is called inline, without deadline.

namespace ddp::comm {

void NcclBackend::Impl::abortComm(const std::string& why) {
  if (comm == nullptr) return;
  ncclComm_t handle = comm;
  comm = nullptr;
  const int device = options.device;
  // Written by the helper before it signals completion (read only after kReturned).
  auto result = std::make_shared<ncclResult_t>(ncclSuccess);
  const std::string what = "ncclCommAbort on " + group + " (" + why + ")";
  const AbortOutcome outcome = runAbortUnderDeadline(
      [handle, device, result] {
        DeviceGuard guard(device);
        *result = ncclCommAbort(handle);
      },
      options.abortTimeout, options.onAbortHung, what);
  if (outcome == AbortOutcome::kReturned && *result != ncclSuccess) {
    DDP_LOG(Warning) << ncclStatus(*result, nullptr, what);
  }
}

// ---------------------------------------------------------------------------------------------

bool ncclBackendAvailable() { return true; }

Result<std::unique_ptr<Backend>> createNcclBackend(const NcclOptions& options, Store& store) {
  DDP_ASSIGN_OR_RETURN(auto b, NcclBackend::create(options, store));
  return std::unique_ptr<Backend>(std::move(b));
}

// ---------------------------------------------------------------------------------------------

Result<std::unique_ptr<NcclBackend>> NcclBackend::create(const NcclOptions& options, Store& store) {
  DDP_RETURN_IF_ERROR(options.validate());
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  m.options = options;
  m.group = "nccl:" + options.prefix + " rank " + std::to_string(options.rank) + "/" + std::to_string(options.size);
  m.commName = m.group;
  const Deadline deadline = Deadline::after(options.connectTimeout);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    return unavailable("nccl: no CUDA device visible to " + m.group);
  }
  if (options.device >= devices) {
    return invalidArgument("nccl: device " + std::to_string(options.device) + " not present (" +
                           std::to_string(devices) + " visible)");
  }
  DeviceGuard guard(options.device);
  DDP_RETURN_IF_ERROR(guard.status());

  // Unique id through the store.
  const std::string key = options.prefix + "/nccl_unique_id";
  ncclUniqueId id;
  if (options.rank == 0) {
    DDP_RETURN_IF_ERROR(ncclStatus(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId"));
    DDP_RETURN_IF_ERROR(store.set(key, std::string(id.internal, sizeof(id.internal)))
                            .withContext("nccl: publishing the unique id"));
  } else {
    auto got = store.get(key, deadline);
    if (!got.isOk()) return got.status().withContext("nccl: " + m.group + " waiting for rank 0's unique id");
    if (got->size() != sizeof(id.internal)) {
      return dataLoss("nccl: unique id under '" + key + "' has " + std::to_string(got->size()) +
                      " bytes, expected " + std::to_string(sizeof(id.internal)));
    }
    std::memcpy(id.internal, got->data(), sizeof(id.internal));
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = m.commName.c_str();
  ncclResult_t r = ncclCommInitRankConfig(&m.comm, options.size, id, options.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    return ncclStatus(r, nullptr, "ncclCommInitRankConfig on " + m.group);
  }
  {
    std::lock_guard<std::mutex> lock(m.commMu);
    Status st = m.waitReady(r, deadline, "ncclCommInitRankConfig on " + m.group);
    if (!st.isOk()) {
      m.abortComm("communicator init failed");
      return st;
    }
  }
  auto fail = [&](const Status& st) {
    std::lock_guard<std::mutex> lock(m.commMu);
    m.abortComm("backend setup failed: " + st.message());
    if (m.stream != nullptr) (void)cudaStreamDestroy(m.stream);
    if (m.inputReady != nullptr) (void)cudaEventDestroy(m.inputReady);
    if (m.scratch != nullptr) (void)cudaFree(m.scratch);
    return st;
  };
  Status st = cudaStatus(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "nccl stream");
  if (st.isOk()) st = cudaStatus(cudaEventCreateWithFlags(&m.inputReady, cudaEventDisableTiming), "nccl input event");
  if (st.isOk()) st = cudaStatus(cudaMalloc(reinterpret_cast<void**>(&m.scratch), sizeof(float)), "nccl barrier scratch");
  if (st.isOk()) st = cudaStatus(cudaMemset(m.scratch, 0, sizeof(float)), "nccl barrier scratch");
  if (!st.isOk()) return fail(st);

  m.flight = std::make_unique<FlightRecorder>();
  Impl* raw = impl.get();
  m.watchdog = std::make_unique<Watchdog>(SystemClock::instance(), [raw](const WatchedOp& op, const Status& s) {
    raw->abortWith(abortedError("communicator aborted after a timeout: " + s.message()), op.seq, s);
  });
  m.poller = std::thread([raw] { raw->pollLoop(); });
  return std::unique_ptr<NcclBackend>(new NcclBackend(std::move(impl)));
}

NcclBackend::NcclBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NcclBackend::~NcclBackend() {
  Impl& m = *impl_;
  // Let ops in flight finish (bounded), then tear down.
  const Deadline drain = Deadline::after(std::chrono::seconds(10));
  while (!m.aborted.load() && !drain.expired()) {
    {
      std::lock_guard<std::mutex> lock(m.flightMu);
      if (m.inflight.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool pending = false;
  {
    std::lock_guard<std::mutex> lock(m.flightMu);
    pending = !m.inflight.empty();
  }
  if (pending) m.abortWith(abortedError("nccl backend destroyed with ops in flight on " + m.group));
  {
    std::lock_guard<std::mutex> lock(m.flightMu);
    m.stopping = true;
  }
  m.flightCv.notify_all();
  m.poller.join();
  m.watchdog->stop();
  {
    std::lock_guard<std::mutex> lock(m.commMu);
    DeviceGuard guard(m.options.device);
    if (m.comm != nullptr) {
      Status st = m.waitReady(ncclCommFinalize(m.comm), Deadline::after(std::chrono::seconds(10)),
                              "ncclCommFinalize on " + m.group);
      if (st.isOk()) {
        (void)ncclCommDestroy(m.comm);
      } else {
        DDP_LOG(Warning) << st << "; aborting the communicator instead";
        m.abortComm("finalize failed");
      }
      m.comm = nullptr;
    }
    (void)cudaStreamDestroy(m.stream);
    (void)cudaEventDestroy(m.inputReady);
    (void)cudaFree(m.scratch);
  }
  // Works never issued to NCCL (held in an unfinished coalescing scope) fail now.
  std::vector<std::weak_ptr<CompletionWork>> works;
  {
    std::lock_guard<std::mutex> lock(m.stateMu);
    works.swap(m.live);
  }
  for (auto& w : works) {
    if (auto p = w.lock()) p->complete(abortedError("nccl backend destroyed on " + m.group));
  }
}

int NcclBackend::rank() const { return impl_->options.rank; }
int NcclBackend::size() const { return impl_->options.size; }
Duration NcclBackend::defaultTimeout() const { return impl_->options.timeout; }
const std::string& NcclBackend::groupName() const { return impl_->group; }
bool NcclBackend::isAborted() const { return impl_->aborted.load(); }

void NcclBackend::abort(const Status& reason) {
  impl_->abortWith(reason.code() == StatusCode::kAborted ? reason : abortedError(reason.message()));
}

}  // namespace ddp::comm
