#pragma once
// ddpctl's controller-backed commands: submit, get, describe, logs, cancel, scale, delete, watch and
// checkpoints, speaking the controller's user API (docs/API.md) through ApiClient. Each runs
// in-process: it takes its arguments and a ClientIo and returns the exit status; nothing here
// calls exit() or writes to the process's streams except through ClientIo.
// Thread model: runs on the calling thread and blocks it: each request up to --timeout;
// `watch` and `logs -f` until the job ends (or the server ends the stream). Starts no threads.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "common/clock.h"
#include "tools/ddpctl/api_client.h"

namespace ddp::ddpctl {

// Exit statuses of the client commands.
enum ClientExit : int {
  kClientOk = 0,
  kClientFailed = 1,     // the request failed (unreachable, refused, not found), or the watched job Failed
  kClientUsage = 2,      // bad arguments, or a document the controller rejected as invalid
  kClientCancelled = 3,  // the watched job was Cancelled
};

// watch polls the job this often; faster while it is Pending (workers joining).
inline constexpr Duration kWatchInterval = std::chrono::seconds(1);
inline constexpr Duration kWatchPendingInterval = std::chrono::milliseconds(200);
// Once it reached the controller, watch gives up only after this many polls in a row got no
// answer (a controller restart in between is survived).
inline constexpr int kWatchMaxMissedPolls = 10;
// logs -f: how long the stream may stay silent before the client gives up on it.
inline constexpr Duration kLogsFollowIdleTimeout = std::chrono::hours(24);

// Where a command reads and writes, and what it asks of the world; tests pass string streams,
// a fake environment, and a sleep that does not wait long.
struct ClientIo {
  std::ostream& out;
  std::ostream& err;
  std::istream& in;                          // `submit -`
  EnvLookup env;                             // DDP_SERVER, DDP_TOKEN, DDP_TOKEN_FILE
  bool outIsTty = false;                     // watch redraws one line with \r on a terminal
  std::function<void(Duration)> sleep;       // watch's pause between polls
  std::function<int64_t()> nowUnixSeconds;   // what AGE is measured to
};

// std::cout / std::cerr / std::cin, the process environment, isatty(stdout), real time.
ClientIo processClientIo();

bool isClientCommand(const std::string& name);

// Runs client command `name` (isClientCommand(name)) with `args`, everything after the
// command's name; the global options (--server, --token-file, --timeout) may appear anywhere
// in them. Returns the exit status (ClientExit).
int runClientCommand(const std::string& name, std::vector<std::string> args, const ClientIo& io);

// For `ddpctl --help`: one line per client command, and the global options block.
std::string clientCommandsSummary();
std::string clientGlobalOptionsUsage();
// `ddpctl NAME --help`.
std::string clientCommandUsage(const std::string& name);

}  // namespace ddp::ddpctl
