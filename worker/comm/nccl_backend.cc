// NcclOptions validation and the default abort-hung handler (every build), and the CPU-only
// stand-in of createNcclBackend.
#include "worker/comm/nccl_backend.h"

#include <cstdlib>

#include "common/log.h"

namespace ddp::comm {

void exitOnNcclAbortHung(const std::string& message) {
  DDP_LOG(Error) << message << "; exiting with code " << kWorkerExitAbortHung
                 << " so that this worker is replaced rather than hang";
  std::_Exit(kWorkerExitAbortHung);
}

Status NcclOptions::validate() const {
  if (size < 1) return invalidArgument("nccl: size must be >= 1, got " + std::to_string(size));
  if (rank < 0 || rank >= size) {
    return invalidArgument("nccl: rank " + std::to_string(rank) + " out of range [0, " + std::to_string(size) + ")");
  }
  if (device < 0) return invalidArgument("nccl: device must be >= 0, got " + std::to_string(device));
  if (prefix.empty()) return invalidArgument("nccl: prefix must not be empty (namespace it per job and generation)");
  if (timeout <= Duration::zero()) return invalidArgument("nccl: timeout must be > 0");
  if (connectTimeout <= Duration::zero()) return invalidArgument("nccl: connectTimeout must be > 0");
  if (pollInterval <= Duration::zero()) return invalidArgument("nccl: pollInterval must be > 0");
  if (abortTimeout <= Duration::zero()) return invalidArgument("nccl: abortTimeout must be > 0");
  if (!onAbortHung) return invalidArgument("nccl: onAbortHung must be set (the default exits the process)");
  return Status::ok();
}

#if !DDP_WITH_CUDA

bool ncclBackendAvailable() { return false; }

Result<std::unique_ptr<Backend>> createNcclBackend(const NcclOptions& options, Store&) {
  DDP_RETURN_IF_ERROR(options.validate());
  return unimplemented("nccl backend: this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
}

#endif

}  // namespace ddp::comm
