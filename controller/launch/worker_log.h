#pragma once
// WorkerLog: one worker slot's size-capped log file pair, shared by the launcher (rotation,
// exit reports) and the log streams reading it.
//
// Note [Log rotation]
// A worker appends (O_APPEND) to STATE/jobs/<job>/logs/<id>.log. Once that file passes
// maxBytes, rotateIfOver copies its last part (the last maxBytes/2 bytes, from a line start,
// plus what the worker appends while the copy runs, up to maxBytes in all) to <id>.log.1,
// replacing the previous .1, and truncates the live file to zero; the worker keeps writing to
// the same descriptor, and O_APPEND puts its next line at the new end. A slot's disk use
// therefore stays under 2 x maxBytes (typically 1.5 x) plus what it writes in one monitor
// period. Lines written between the copy's last read and the truncation (a window of one
// system call, or more if the copy hits its limit) are lost; the worker is never blocked.
// Readers see .1 then the live file.
//
// Note [Log offsets]
// Readers hold a logical offset into the slot's whole output since this WorkerLog was made:
// .1 covers [rotatedStart, base) and the live file [base, base + size). A rotation moves both
// marks forward; a reader that fell behind the retained part skips to rotatedStart. Rotation
// and every read happen under mu_, so a reader never sees the pair half rotated.
//
// Thread model: thread-safe; mu_ guards the offsets and serialises file access.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::controller {

class WorkerLog {
 public:
  // `path`: the live file (which need not exist yet); the rotated one is path + ".1".
  explicit WorkerLog(std::string path);

  const std::string& path() const { return path_; }
  std::string rotatedPath() const { return path_ + ".1"; }

  int64_t beginOffset() const;  // the first byte still on disk (Note [Log offsets])
  int64_t endOffset() const;    // one past the last byte written so far

  // Note [Log rotation]. Returns whether it rotated.
  Result<bool> rotateIfOver(int64_t maxBytes);
  // Up to `maxBytes` from `offset`, which it advances (past bytes rotated away, too). Empty
  // when there is nothing new.
  std::string readFrom(int64_t& offset, size_t maxBytes) const;
  // Where the last `lines` lines begin, never before `floor`; lines < 0: max(floor, begin).
  int64_t tailOffset(int64_t lines, int64_t floor) const;
  // The last `lines` lines at or after `floor`, without their newlines.
  std::vector<std::string> lastLines(size_t lines, int64_t floor) const;

  // Whether no more output will come (the slot's writers are gone and the job is stopped or
  // forgotten, or the launcher is gone): following readers end once they have read it all.
  bool finished() const { return finished_.load(); }
  void setFinished(bool finished) { finished_.store(finished); }

 private:
  int64_t liveSizeLocked() const;
  // Reads from the file holding logical `offset` (never across the .1/live boundary).
  int64_t readAtLocked(int64_t offset, char* buf, size_t len) const;
  int64_t tailOffsetLocked(int64_t lines, int64_t floor) const;

  const std::string path_;
  mutable std::mutex mu_;
  int64_t rotatedStart_ = 0;  // guarded by mu_
  int64_t base_ = 0;          // guarded by mu_
  std::atomic<bool> finished_{false};
};

}  // namespace ddp::controller
