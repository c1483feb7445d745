#pragma once
// The deadline around ncclCommAbort (Note [NCCL abort deadline] in nccl_backend_cuda.cc), kept
// apart from NCCL so that every build (CPU-only included) compiles and tests it with a fake
// abort. NcclBackend::Impl::abortComm is its one product caller.
// Thread model: each call starts one short-lived helper thread ("ddp-nccl-abort") that is
// detached, never joined (joining a hung abort is the very hang being bounded); the caller
// waits for it up to the deadline. Calls share nothing and may run on any thread.

#include <functional>
#include <string>

#include "common/clock.h"

namespace ddp::comm {

enum class AbortOutcome {
  kReturned,  // the abort returned within the deadline
  kHung,      // it had not: `onHung` was called (and returned); the abort may still be running
  kInline,    // no thread could be started: the abort ran on the caller's thread, no deadline
};

// Runs `abortCall` on a detached helper thread and waits up to `timeout` for it to return. If it
// has not, calls `onHung` (on the caller's thread) with "<what> did not return within <s> s"
// and returns kHung once `onHung` returns (NcclOptions::onAbortHung's default never returns: it
// ends the process). `abortCall` must own everything it touches (captures by value or
// shared_ptr): it may still run, or never finish, after this call returned.
AbortOutcome runAbortUnderDeadline(std::function<void()> abortCall, Duration timeout,
                                   const std::function<void(const std::string&)>& onHung, const std::string& what);

}  // namespace ddp::comm
