#pragma once
// CheckpointLock: one job at a time in a checkpoint directory.
//
// Note [Checkpoint directory lock]
// <dir>/LOCK is held with flock(2) (exclusive, non-blocking tries) by rank 0's process for the
// trainer's lifetime (CheckpointCoordinator::prepare takes it, destroying the coordinator
// releases it). Its contents name the holder: job name, a random run id, pid, host and the time
// it was taken (LockHolder). Only the flock decides whether the directory is in use: the kernel
// drops it when the process exits however it exits (SIGKILL included), so a dead run never
// leaves a stale lock, and the file itself is never removed (removing a locked file would let
// a second process lock a fresh inode under the same name). A process that finds the lock held
// reads the holder:
//  - another job's name: refused at once, naming the holder;
//  - the same job's name (a previous incarnation of this job still exiting, e.g. a restarted
//    worker) or a holder not yet written: tried again until the deadline, then refused.
// flock locks belong to the open file description, so two acquire() calls in one process
// exclude each other like two processes do, and a trainer destroyed and created again in one
// process (in-process recovery) releases and re-takes it. Only rank 0 locks: the ranks of a job
// may share the directory over a network mount. On NFS, Linux emulates flock with POSIX
// byte-range locks, which exclude other hosts and processes but belong to the process: there,
// two acquire() calls of one process do not exclude each other, and closing any descriptor of
// the file drops the process's lock (this code opens LOCK elsewhere only to read a holder it
// could not lock out).
// Thread model: acquire() blocks (polls) up to its deadline; a CheckpointLock is owned by one
// thread; readHolder() is a plain read.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::runtime {

inline constexpr const char* kLockFileName = "LOCK";
// How long a run waits for a previous run of the same job to let go of the lock.
inline constexpr Duration kSameJobLockWait = std::chrono::seconds(30);
inline constexpr Duration kLockPollInterval = std::chrono::milliseconds(50);

// Who holds (or last held) a checkpoint directory: the contents of <dir>/LOCK.
struct LockHolder {
  std::string job;
  std::string runId;  // random hex, unique per acquire()
  int64_t pid = 0;
  std::string host;
  int64_t sinceUnixMs = 0;

  // "job 'x' (run 3f2a..., pid 4242 on host node-1, since 2024-05-01T12:00:00Z)"
  std::string describe() const;
  // "job: x\nrun: ...\npid: ...\nhost: ...\nsince_unix_ms: ...\n"
  std::string encode() const;
  // DataLoss when a field is missing (e.g. read while its writer was writing it).
  static Result<LockHolder> decode(std::string_view text, const std::string& what);
};

class CheckpointLock {
 public:
  // Takes <dir>/LOCK for `job` (Note [Checkpoint directory lock]); `dir` must exist.
  // FailedPrecondition naming the directory and the holder when another job holds it, or when
  // this job's name still holds it at `deadline`; FailedPrecondition with the system's reason
  // when the file cannot be created, locked or written.
  static Result<CheckpointLock> acquire(const std::string& dir, const std::string& job, Deadline deadline);
  // What <dir>/LOCK says (held or not). NotFound without a lock file.
  static Result<LockHolder> readHolder(const std::string& dir);

  CheckpointLock(CheckpointLock&& other) noexcept;
  CheckpointLock& operator=(CheckpointLock&& other) noexcept;
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;
  ~CheckpointLock();  // release()

  // Drops the flock (closes the file); the file and its contents stay. Idempotent.
  void release();
  bool held() const { return fd_ >= 0; }
  const LockHolder& holder() const { return self_; }
  const std::string& path() const { return path_; }

 private:
  CheckpointLock(int fd, std::string path, LockHolder self);

  int fd_ = -1;
  std::string path_;
  LockHolder self_;
};

}  // namespace ddp::runtime
