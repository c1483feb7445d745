#pragma once
// StopSignal: SIGTERM / SIGINT set a process-wide flag that the trainer reads at step
// boundaries (it then checkpoints and exits cleanly; see docs/TRAINING.md "Stopping"). SIGPIPE
// is ignored: a peer that closed its socket fails the write (EPIPE), not the process.
// Thread model: install() once from main before threads start; the flag is an atomic, read by
// any thread; the handler only stores to it (async-signal-safe).

#include <atomic>

namespace ddp::runtime {

// Installs the handlers (idempotent) and returns the flag they set.
const std::atomic<bool>& installStopSignalHandlers();
// Sets the flag as a signal would (worker_entry.cc: the heartbeat reporter got a `stop` command).
void requestStop();

}  // namespace ddp::runtime
