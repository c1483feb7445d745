#pragma once
// LogStream implementations over WorkerLog files: one slot's log, or several merged with a
// per-line prefix ("[w3] "). Reading polls the files (every kLogPollInterval while following),
// so a stream costs nothing between reads and needs no help from the launcher, which it may
// outlive (Note [Log offsets] explains how a reader survives rotation).
// Thread model: a stream is used by one thread at a time; the WorkerLog it reads is shared.

#include <memory>
#include <string>
#include <vector>

#include "controller/launch/launcher.h"
#include "controller/launch/worker_log.h"

namespace ddp::controller {

inline constexpr Duration kLogPollInterval = std::chrono::milliseconds(50);

class WorkerLogStream final : public LogStream {
 public:
  // Starts at the last `options.tailLines` lines; every line returned is
  // prefixed with `linePrefix`.
  WorkerLogStream(std::shared_ptr<const WorkerLog> log, LogOptions options, std::string linePrefix);
  Result<std::string> read(Deadline deadline) override;
  bool done() const override { return done_; }
  // One non-blocking step: the whole lines available now ("" when none); sets done() at the end.
  std::string poll();

 private:
  std::string takeLines(size_t upTo);

  std::shared_ptr<const WorkerLog> log_;
  bool follow_;
  std::string prefix_;
  int64_t offset_ = 0;
  int64_t limit_ = 0;      // not following: the end of the log when the stream was opened
  std::string pending_;    // read but not yet returned (a partial last line)
  bool done_ = false;
};

class MergedLogStream final : public LogStream {
 public:
  explicit MergedLogStream(std::vector<std::unique_ptr<WorkerLogStream>> parts) : parts_(std::move(parts)) {}
  Result<std::string> read(Deadline deadline) override;
  bool done() const override;

 private:
  std::vector<std::unique_ptr<WorkerLogStream>> parts_;
};

}  // namespace ddp::controller
