#pragma once
// Pid files: how a restarted controller finds the workers its predecessor started.
//
// Note [Pid files and process identity]
// A pid alone does not name a process: once a worker exits, the kernel may hand its pid to an
// unrelated process. A pid file therefore holds the pid and the process's start time (field 22
// of /proc/<pid>/stat, clock ticks since boot), and a process is "the same" only when a process
// with that pid is alive (not a zombie) and has that start time. The file is written atomically
// (temporary file, fsync, rename, fsync of the directory: Note [Atomic file write]), so a
// controller killed mid-write leaves the old file or the new one, never half of one.
// Format: "pid=<pid>\nstart_time=<ticks>\n".
// Thread model: free functions, no shared state.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::controller {

struct ProcessIdentity {
  int64_t pid = 0;
  int64_t startTime = 0;  // field 22 of /proc/<pid>/stat
  bool operator==(const ProcessIdentity&) const = default;
};

struct ProcStat {
  char state = '?';       // R, S, D, T, Z, X, ...
  int64_t startTime = 0;
  bool alive() const { return state != 'Z' && state != 'X' && state != 'x'; }
};

// Reads /proc/<pid>/stat. NotFound when there is no such process.
Result<ProcStat> readProcStat(int64_t pid);
// Whether `id` names a live (non-zombie) process (Note [Pid files and process identity]).
bool isSameLiveProcess(const ProcessIdentity& id);

Status writePidFile(const std::string& path, const ProcessIdentity& id);
// NotFound when absent; DataLoss when malformed.
Result<ProcessIdentity> readPidFile(const std::string& path);

}  // namespace ddp::controller
