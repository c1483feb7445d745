#pragma once
// NcclBackend: the GPU collective backend over NCCL (CUDA builds only). Implements
// comm::Backend (see backend.h for the contract every op follows) on buffers of one CUDA device.
//
// createNcclBackend() exists in every build: CPU-only builds answer Unimplemented, so callers
// need no #if. The class itself is declared only when DDP_WITH_CUDA is set.
//
// Rendezvous: rank 0 creates the ncclUniqueId and sets it in the Store under
// "<prefix>/nccl_unique_id"; the other ranks get it with a deadline (connectTimeout). Use a prefix
// per job and generation (Note [Store prefix per generation] in gloo_store_adapter.h).
//
// Note [NCCL streams and completion]
// The communicator is nonblocking (ncclConfig_t::blocking = 0): no NCCL call blocks the caller;
// a call that answers ncclInProgress is followed by polling ncclCommGetAsyncError until ready,
// never past the op's deadline or an abort. Each op is enqueued on the backend's own stream
// after that stream waits for the device's legacy default stream (inputs produced by kernels on
// stream 0 are therefore ready; producers on other streams must synchronise first). Each op
// records its own CUDA event; a poller thread completes Works in issue order when their event
// has fired, and checks ncclCommGetAsyncError while an op is pending. A Work that completes ok
// means the data is on the device.
//
// Note [NCCL semantics]
//  - f16 / bf16 allreduce and reduce-scatter accumulate in f32 (the contract): the input is cast
//    to an f32 scratch buffer on the stream, reduced in f32, and cast back.
//  - avg uses ncclAvg; barrier is a 1-element f32 allreduce; gather is a group of sends to the
//    root plus the root's local copy; send/recv pair up per peer in issue order (NCCL has no
//    tags: the tag is not transmitted and callers must post matching pairs in the same order).
//  - Coalescing: the scope's members run inside one ncclGroupStart/ncclGroupEnd, so batched
//    send/recv progress together; every member's Work completes with the batch.
//  - Ops with zero elements are not sent to NCCL (every rank skips them alike).
//  - Rank disagreement is not detected by NCCL: a mismatched op hangs until its timeout.
//
// Note [NCCL abort]
// abort(), an op timing out (Watchdog) or an asynchronous NCCL error calls ncclCommAbort once,
// fails every pending op (a timed-out op with Timeout, the rest with Aborted), and dumps the
// FlightRecorder to the log. The communicator is unusable afterwards: build the next generation
// with a new prefix. ncclCommAbort itself can hang; every call of it runs under
// NcclOptions::abortTimeout (Note [NCCL abort deadline] in nccl_backend_cuda.cc).
//
// Thread model: every public method may be called from any thread. The backend starts two
// threads, joined by the destructor: the completion poller and the Watchdog's poller; each
// ncclCommAbort runs on a short-lived detached thread of its own (Note [NCCL abort deadline]).
// issueMu_ (inside Impl) serialises issue and coalescing state; commMu serialises NCCL calls on
// the communicator (NCCL communicators are not thread-safe) with the poller's error checks and
// ncclCommAbort; it is always taken after issueMu_, never before.

#include <functional>
#include <memory>
#include <string>

#include "worker/comm/backend.h"
#include "common/store/store.h"

namespace ddp::comm {

// Exit code of a worker whose ncclCommAbort did not return within NcclOptions::abortTimeout:
// the worker exits and is replaced rather than hang (Note [NCCL abort deadline]).
inline constexpr int kWorkerExitAbortHung = 75;
inline constexpr Duration kDefaultNcclAbortTimeout = std::chrono::seconds(10);

// The default NcclOptions::onAbortHung: logs `message` at Error and ends the process at once
// with kWorkerExitAbortHung (std::_Exit: no destructors, no atexit handlers, which could block
// on the hung communicator). Never returns.
[[noreturn]] void exitOnNcclAbortHung(const std::string& message);

struct NcclOptions {
  int rank = 0;
  int size = 1;
  int device = 0;                                      // CUDA ordinal of this rank's buffers
  std::string prefix = "nccl";                         // store namespace of the unique id
  Duration timeout = kDefaultOpTimeout;                // default per-op timeout
  Duration connectTimeout = std::chrono::minutes(5);   // unique id exchange + communicator init
  Duration pollInterval = std::chrono::microseconds(200);  // completion poller period
  bool accumulateHalfInF32 = true;                     // Note [NCCL semantics]
  // How long an abort waits for ncclCommAbort (Note [NCCL abort deadline]).
  Duration abortTimeout = kDefaultNcclAbortTimeout;
  // Called (on the aborting thread) when ncclCommAbort has not returned within abortTimeout,
  // with a message naming the communicator and the seconds waited. The default ends the
  // process; a callback that returns lets the abort go on without the communicator (which is
  // then leaked, its abort still running on its own thread). Must not be empty.
  std::function<void(const std::string&)> onAbortHung = exitOnNcclAbortHung;

  Status validate() const;
};

// Whether this build contains the NCCL backend.
bool ncclBackendAvailable();

// Rendezvous through `store` (used only during the call) and build the communicator; blocks
// until every rank joined or options.connectTimeout passes. Unimplemented in CPU-only builds.
Result<std::unique_ptr<Backend>> createNcclBackend(const NcclOptions& options, Store& store);

#if DDP_WITH_CUDA

class NcclBackend final : public Backend {
 public:
  static Result<std::unique_ptr<NcclBackend>> create(const NcclOptions& options, Store& store);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  int rank() const override;
  int size() const override;
  std::string name() const override { return "nccl"; }
  bool supportsDevice(DeviceType type) const override { return type == DeviceType::kCuda; }

  WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& opts = {}) override;
  WorkPtr broadcast(BufferView buf, int root, const OpOptions& opts = {}) override;
  WorkPtr allgather(BufferView in, BufferView out, const OpOptions& opts = {}) override;
  WorkPtr reduceScatter(BufferView in, BufferView out, ReduceOp op,
                        const OpOptions& opts = {}) override;
  WorkPtr gather(BufferView in, BufferView out, int root, const OpOptions& opts = {}) override;
  WorkPtr barrier(const OpOptions& opts = {}) override;
  WorkPtr send(BufferView buf, int dst, int tag, const OpOptions& opts = {}) override;
  WorkPtr recv(BufferView buf, int src, int tag, const OpOptions& opts = {}) override;

  Status startCoalescing() override;
  WorkPtr endCoalescing() override;

  void abort(const Status& reason) override;
  bool isAborted() const override;
  Duration defaultTimeout() const override;

  // "nccl:<prefix> rank r/n": names this communicator in messages.
  const std::string& groupName() const;

  struct Impl;  // public for the implementation file's helpers; not an API

 private:
  explicit NcclBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

#endif  // DDP_WITH_CUDA

}  // namespace ddp::comm
