#pragma once
// NcclBackend internals shared by nccl_backend_cuda.cc (life cycle, launch, completion, abort)
// and nccl_backend_ops_cuda.cc (the ops, validation, coalescing). Not an API; CUDA builds only.
// Thread model and Notes: see nccl_backend.h.

#if DDP_WITH_CUDA

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "worker/comm/flight_recorder.h"
#include "worker/comm/nccl_backend.h"
#include "worker/comm/nccl_half_cast_cuda.h"
#include "worker/comm/op_args.h"
#include "worker/comm/watchdog.h"

namespace ddp::comm {

namespace nccl_detail {

inline Status cudaStatus(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::ok();
  return internalError(what + ": CUDA error " + std::to_string(int(e)) + " (" + cudaGetErrorString(e) + ")");
}

inline Status ncclStatus(ncclResult_t r, ncclComm_t comm, const std::string& what) {
  if (r == ncclSuccess) return Status::ok();
  std::string detail = ncclGetErrorString(r);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') detail += std::string(": ") + last;
  }
  return internalError(what + ": NCCL " + detail);
}

// Sets the current device for the scope and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
    status_ = cudaStatus(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~DeviceGuard() {
    if (prev_ >= 0) (void)cudaSetDevice(prev_);
  }
  const Status& status() const { return status_; }

 private:
  int prev_ = -1;
  Status status_;
};

inline bool ncclType(DType d, ncclDataType_t* out) {
  switch (d) {
    case DType::kF32: *out = ncclFloat32; return true;
    case DType::kF64: *out = ncclFloat64; return true;
    case DType::kF16: *out = ncclFloat16; return true;
    case DType::kBF16: *out = ncclBfloat16; return true;
    case DType::kI32: *out = ncclInt32; return true;
    case DType::kI64: *out = ncclInt64; return true;
  }
  return false;
}

inline ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAvg: return ncclAvg;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
  }
  return ncclSum;
}

}  // namespace nccl_detail

struct NcclOp : OpArgs {  // the call's arguments (op_args.h) and its issue
  Duration timeout{};
  Status error;  // the caller's arguments were bad
  std::shared_ptr<CompletionWork> work;
};

using nccl_detail::cudaStatus;
using nccl_detail::DeviceGuard;
using nccl_detail::ncclOp;
using nccl_detail::ncclStatus;
using nccl_detail::ncclType;

struct NcclBackend::Impl {
  struct InFlight {
    uint64_t seq = 0;
    std::vector<std::shared_ptr<CompletionWork>> works;
    cudaEvent_t done = nullptr;
  };

  NcclOptions options;
  std::string group;
  std::string commName;  // kept alive for ncclConfig_t::commName
  std::unique_ptr<FlightRecorder> flight;
  std::unique_ptr<Watchdog> watchdog;

  std::mutex commMu;            // NCCL calls on comm, error polling, abort
  ncclComm_t comm = nullptr;    // guarded by commMu; null once aborted or destroyed
  cudaStream_t stream = nullptr;
  cudaEvent_t inputReady = nullptr;
  float* scratch = nullptr;     // barrier's one element

  std::mutex issueMu;           // seq and coalescing state
  uint64_t seq = 0;             // guarded by issueMu
  bool coalescing = false;      // guarded by issueMu
  std::thread::id coalescingThread;  // guarded by issueMu
  std::vector<NcclOp> held;     // guarded by issueMu

  std::atomic<bool> aborted{false};
  std::mutex stateMu;
  Status abortStatus;           // guarded by stateMu
  std::vector<std::weak_ptr<CompletionWork>> live;  // guarded by stateMu: not yet completed

  std::mutex flightMu;
  std::condition_variable flightCv;
  std::deque<InFlight> inflight;  // guarded by flightMu
  bool stopping = false;          // guarded by flightMu
  std::thread poller;

  // Hands `comm` to ncclCommAbort under options.abortTimeout and leaves it null (Note [NCCL
  // abort deadline] in nccl_backend_cuda.cc); `why` names the occasion in messages. Requires
  // commMu. Returns after the abort, or after options.onAbortHung if that returns.
  void abortComm(const std::string& why);

  Status currentAbortStatus() {
    std::lock_guard<std::mutex> lock(stateMu);
    return abortStatus;
  }

  // Polls the communicator until it leaves ncclInProgress. Requires commMu.
  Status waitReady(ncclResult_t r, Deadline deadline, const std::string& what) {
    if (r != ncclSuccess && r != ncclInProgress) return ncclStatus(r, comm, what);
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t q = ncclCommGetAsyncError(comm, &state);
      if (q != ncclSuccess) return ncclStatus(q, comm, what + " (ncclCommGetAsyncError)");
      if (state == ncclSuccess) return Status::ok();
      if (state != ncclInProgress) return ncclStatus(state, comm, what);
      if (aborted.load()) return currentAbortStatus();
      if (deadline.expired()) return timeoutError(what + " still in progress at its deadline on " + group);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return Status::ok();
  }

  void track(const std::shared_ptr<CompletionWork>& w) {
    std::lock_guard<std::mutex> lock(stateMu);
    std::erase_if(live, [](const auto& p) { return p.expired(); });
    live.push_back(w);
  }

  // Enqueues one op's NCCL calls; `after` collects work to enqueue after the group ends.
  // Requires commMu.
  Status enqueue(const NcclOp& op, std::vector<std::function<Status()>>* after, Deadline deadline) {
    ncclDataType_t dt;
    if (!ncclType(op.in.dtype, &dt)) return invalidArgument("nccl: unsupported dtype");
    const std::string what = std::string("nccl ") + opTypeName(op.type);
    auto check = [&](ncclResult_t r) { return waitReady(r, deadline, what); };
    const bool half = op.in.dtype == DType::kF16 || op.in.dtype == DType::kBF16;
    const bool bf16 = op.in.dtype == DType::kBF16;
    switch (op.type) {
      case OpType::kAllreduce: {
        const size_t n = op.in.count;
        if (n == 0) return Status::ok();
        if (half && options.accumulateHalfInF32) {
          float* tmp = nullptr;
          DDP_RETURN_IF_ERROR(cudaStatus(cudaMallocAsync(reinterpret_cast<void**>(&tmp), n * 4, stream), what + " scratch"));
          DDP_RETURN_IF_ERROR(cudaStatus(cudaError_t(castHalfToF32(op.in.data, tmp, n, bf16, stream)), what + " cast"));
          DDP_RETURN_IF_ERROR(check(ncclAllReduce(tmp, tmp, n, ncclFloat32, ncclOp(op.reduce), comm, stream)));
          void* dst = op.in.data;
          cudaStream_t s = stream;
          after->push_back([=] {
            DDP_RETURN_IF_ERROR(cudaStatus(cudaError_t(castF32ToHalf(tmp, dst, n, bf16, s)), "nccl allreduce cast back"));
            return cudaStatus(cudaFreeAsync(tmp, s), "nccl allreduce scratch free");
          });
          return Status::ok();
        }
        return check(ncclAllReduce(op.in.data, op.in.data, n, dt, ncclOp(op.reduce), comm, stream));
      }
      case OpType::kBroadcast:
        if (op.in.count == 0) return Status::ok();
        return check(ncclBroadcast(op.in.data, op.in.data, op.in.count, dt, op.root, comm, stream));
      case OpType::kAllgather:
        if (op.in.count == 0) return Status::ok();
        return check(ncclAllGather(op.in.data, op.out.data, op.in.count, dt, comm, stream));
      case OpType::kReduceScatter: {
        const size_t n = op.out.count;
        if (n == 0) return Status::ok();
        if (half && options.accumulateHalfInF32) {
          float* tmpIn = nullptr;
          float* tmpOut = nullptr;
          DDP_RETURN_IF_ERROR(cudaStatus(cudaMallocAsync(reinterpret_cast<void**>(&tmpIn), op.in.count * 4, stream), what + " scratch"));
          DDP_RETURN_IF_ERROR(cudaStatus(cudaMallocAsync(reinterpret_cast<void**>(&tmpOut), n * 4, stream), what + " scratch"));
          DDP_RETURN_IF_ERROR(cudaStatus(cudaError_t(castHalfToF32(op.in.data, tmpIn, op.in.count, bf16, stream)), what + " cast"));
          DDP_RETURN_IF_ERROR(check(ncclReduceScatter(tmpIn, tmpOut, n, ncclFloat32, ncclOp(op.reduce), comm, stream)));
          void* dst = op.out.data;
          cudaStream_t s = stream;
          after->push_back([=] {
            DDP_RETURN_IF_ERROR(cudaStatus(cudaError_t(castF32ToHalf(tmpOut, dst, n, bf16, s)), "nccl reduce_scatter cast back"));
            DDP_RETURN_IF_ERROR(cudaStatus(cudaFreeAsync(tmpIn, s), "nccl reduce_scatter scratch free"));
            return cudaStatus(cudaFreeAsync(tmpOut, s), "nccl reduce_scatter scratch free");
          });
          return Status::ok();
        }
        return check(ncclReduceScatter(op.in.data, op.out.data, n, dt, ncclOp(op.reduce), comm, stream));
      }
      case OpType::kGather: {
        const size_t n = op.in.count;
        if (n == 0) return Status::ok();
        const size_t bytes = op.in.bytes();
        DDP_RETURN_IF_ERROR(check(ncclGroupStart()));
        if (options.rank == op.root) {
          char* out = static_cast<char*>(op.out.data);
          for (int r = 0; r < options.size; ++r) {
            if (r == op.root) continue;
            DDP_RETURN_IF_ERROR(check(ncclRecv(out + r * bytes, n, dt, r, comm, stream)));
          }
          DDP_RETURN_IF_ERROR(cudaStatus(
              cudaMemcpyAsync(out + op.root * bytes, op.in.data, bytes, cudaMemcpyDeviceToDevice, stream),
              what + " local copy"));
        } else {
          DDP_RETURN_IF_ERROR(check(ncclSend(op.in.data, n, dt, op.root, comm, stream)));
        }
        return check(ncclGroupEnd());
      }
      case OpType::kBarrier:
        return check(ncclAllReduce(scratch, scratch, 1, ncclFloat32, ncclSum, comm, stream));
      case OpType::kSend:
        if (op.in.count == 0) return Status::ok();
        return check(ncclSend(op.in.data, op.in.count, dt, op.peer, comm, stream));
      case OpType::kRecv:
        if (op.in.count == 0) return Status::ok();
        return check(ncclRecv(op.in.data, op.in.count, dt, op.peer, comm, stream));
      case OpType::kCoalesced:
        break;
    }
    return invalidArgument("nccl: unexpected op type");
  }

  // Enqueues `ops` (one op, or a coalesced batch as one NCCL group) and registers the batch for
  // completion under `seq`, completing `works` when it is done.
  Status launch(const std::vector<NcclOp>& ops, uint64_t seq, const std::string& name, size_t bytes,
                std::vector<std::shared_ptr<CompletionWork>> works) {
    Duration timeout{};
    for (const auto& op : ops) timeout = std::max(timeout, op.timeout);
    if (ops.empty()) timeout = options.timeout;
    const Deadline deadline = Deadline::after(timeout);
    cudaEvent_t done = nullptr;
    {
      std::lock_guard<std::mutex> lock(commMu);
      if (comm == nullptr || aborted.load()) return currentAbortStatus();
      DeviceGuard guard(options.device);
      DDP_RETURN_IF_ERROR(guard.status());
      // Note [NCCL streams and completion]: wait for work already queued on stream 0.
      DDP_RETURN_IF_ERROR(cudaStatus(cudaEventRecord(inputReady, cudaStreamLegacy), "nccl input event"));
      DDP_RETURN_IF_ERROR(cudaStatus(cudaStreamWaitEvent(stream, inputReady, 0), "nccl input wait"));
      std::vector<std::function<Status()>> after;
      const bool grouped = ops.size() > 1;
      if (grouped) DDP_RETURN_IF_ERROR(waitReady(ncclGroupStart(), deadline, "ncclGroupStart"));
      for (const auto& op : ops) {
        Status st = enqueue(op, &after, deadline);
        if (!st.isOk()) {
          if (grouped) (void)ncclGroupEnd();
          return st;
        }
      }
      if (grouped) DDP_RETURN_IF_ERROR(waitReady(ncclGroupEnd(), deadline, "ncclGroupEnd"));
      for (auto& a : after) DDP_RETURN_IF_ERROR(a());
      DDP_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "nccl done event"));
      Status st = cudaStatus(cudaEventRecord(done, stream), "nccl done event record");
      if (!st.isOk()) {
        (void)cudaEventDestroy(done);
        return st;
      }
    }
    flight->recordIssued(seq, name, bytes);
    flight->recordStarted(seq);
    watchdog->watch({seq, name, bytes, group, timeout, SystemClock::instance().now() + timeout});
    {
      std::lock_guard<std::mutex> lock(flightMu);
      inflight.push_back({seq, std::move(works), done});
    }
    flightCv.notify_all();
    return Status::ok();
  }

  // Note [NCCL abort]. `culprit` (if non-zero) fails with `culpritStatus`, the rest with `reason`.
  void abortWith(const Status& reason, uint64_t culprit = 0, const Status& culpritStatus = Status::ok()) {
    if (aborted.exchange(true)) return;
    {
      std::lock_guard<std::mutex> lock(stateMu);
      abortStatus = reason;
    }
    {
      std::lock_guard<std::mutex> lock(commMu);
      abortComm("abort: " + reason.message());
    }
    std::deque<InFlight> pending;
    {
      std::lock_guard<std::mutex> lock(flightMu);
      pending.swap(inflight);
    }
    std::vector<std::weak_ptr<CompletionWork>> works;
    {
      std::lock_guard<std::mutex> lock(stateMu);
      works.swap(live);
    }
    DDP_LOG(Error) << group << " aborted: " << reason << "\n" << flight->dump(group);
    for (auto& f : pending) {
      const bool isCulprit = culprit != 0 && f.seq == culprit;
      flight->recordEnded(f.seq, isCulprit ? FlightState::kTimedOut : FlightState::kAborted,
                          (isCulprit ? culpritStatus : reason).message());
      watchdog->unwatch(f.seq);
      for (auto& w : f.works) w->complete(isCulprit ? culpritStatus : reason);
      (void)cudaEventDestroy(f.done);
    }
    for (auto& w : works) {
      if (auto p = w.lock()) p->complete(reason);
    }
  }

  void pollLoop() {
    std::unique_lock<std::mutex> lock(flightMu);
    while (true) {
      flightCv.wait_for(lock, options.pollInterval, [&] { return stopping || !inflight.empty(); });
      if (inflight.empty()) {
        if (stopping) return;
        continue;
      }
      InFlight front = inflight.front();
      lock.unlock();
      cudaError_t q = cudaEventQuery(front.done);
      if (q == cudaSuccess) {
        bool mine = false;
        lock.lock();
        if (!inflight.empty() && inflight.front().seq == front.seq) {
          inflight.pop_front();
          mine = true;
        }
        lock.unlock();
        if (mine) {
          watchdog->unwatch(front.seq);
          flight->recordEnded(front.seq, FlightState::kCompleted);
          (void)cudaEventDestroy(front.done);
          for (auto& w : front.works) w->complete(Status::ok());
        }
        lock.lock();
        continue;  // look at the next one at once
      }
      Status err;
      if (q != cudaErrorNotReady) {
        err = cudaStatus(q, "nccl op seq " + std::to_string(front.seq) + " event");
      } else {
        std::lock_guard<std::mutex> commLock(commMu);
        if (comm != nullptr) {
          ncclResult_t state = ncclSuccess;
          ncclResult_t r = ncclCommGetAsyncError(comm, &state);
          if (r != ncclSuccess) {
            err = ncclStatus(r, comm, "ncclCommGetAsyncError");
          } else if (state != ncclSuccess && state != ncclInProgress) {
            err = ncclStatus(state, comm, "asynchronous NCCL error on " + group);
          }
        }
      }
      if (!err.isOk()) abortWith(abortedError(err.message()), front.seq, err);
      lock.lock();
      if (!stopping) flightCv.wait_for(lock, options.pollInterval, [&] { return stopping; });
    }
  }
};

}  // namespace ddp::comm

#endif  // DDP_WITH_CUDA
