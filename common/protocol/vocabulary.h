#pragma once
// The vocabulary of the worker <-> controller protocol (docs/API.md, "Heartbeats") that both
// sides name: a worker's state in its heartbeat, the command the controller answers with, the
// incarnation header and the worker's exit codes. One definition, used by the worker's
// ControllerClient, the controller and the protocol's codecs (common/protocol/).
// Thread model: constants and pure functions.

#include <string_view>

namespace ddp::protocol {

// The `state` of a heartbeat: Running until the last one, which says how the worker ended.
enum class WorkerState { kRunning, kSucceeded, kFailed, kStopped };
const char* workerStateName(WorkerState s);  // "Running", "Succeeded", "Failed", "Stopped"
bool parseWorkerState(std::string_view text, WorkerState* out);

// `command.type` of a heartbeat's answer.
enum class CommandType { kNone, kCheckpoint, kStop, kAbort, kFlightRecord };
const char* commandTypeName(CommandType t);  // "none", "checkpoint", "stop", "abort", "flightRecord"
bool parseCommandType(std::string_view text, CommandType* out);

// The header that carries a worker's incarnation nonce on every call after its registration
// (Note [Worker incarnations] in controller/jobs/membership/worker_claim.cc).
inline constexpr const char* kIncarnationHeader = "X-DDP-Incarnation";

// A worker process's exit status: 0 finished well (or stopped on request); 2 bad configuration
// (flags, environment, the spec, a refused token: no restart can fix it); 1 any other failure.
inline constexpr int kWorkerExitOk = 0;
inline constexpr int kWorkerExitFailure = 1;
inline constexpr int kWorkerExitBadConfig = 2;

}  // namespace ddp::protocol
