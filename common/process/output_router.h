#pragma once
// OutputRouter: the merged console view of N worker processes (pure; no I/O of its own).
//
// Note [Merged worker output]
// Workers print progress on stdout (human lines or JSON lines) and log lines on stderr
// ("[job r1] W file.cc:12] message", see common/log.h). The user sees one stream:
//  - rank 0's stdout, verbatim (progress or JSON lines);
//  - every rank's warnings and errors, and any stderr line that is not a log line (a crash
//    message, an abort), prefixed "[rank N] " unless the line already names its rank;
//  - rank 0's info log lines (e.g. "resumed from checkpoint step 40").
// Everything else (other ranks' progress, debug lines) is dropped from the view but kept in a
// per-rank tail of the last `tailLines` lines, which `ddpctl run` prints when a worker dies.
// Thread model: not thread-safe; owned by one loop thread (ddpctl run's, bench_train's).

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

namespace ddp::runtime {

enum class StreamKind { kStdout, kStderr };

// Where a routed line goes.
enum class RouteTarget { kDrop, kStdout, kStderr };

struct RoutedLine {
  RouteTarget target = RouteTarget::kDrop;
  std::string text;  // without the trailing newline
};

class OutputRouter {
 public:
  OutputRouter(int worldSize, size_t tailLines);

  // Feeds raw bytes read from one rank's stream; returns the complete lines routed so far.
  std::vector<RoutedLine> feed(int rank, StreamKind stream, const char* data, size_t n);
  // Flushes a partial last line of a closed stream.
  std::vector<RoutedLine> flush(int rank, StreamKind stream);
  // The last lines of `rank` (both streams, in arrival order).
  const std::deque<std::string>& tail(int rank) const { return tails_[static_cast<size_t>(rank)]; }
  // The last error-level log line of `rank` ("" if none): the death report leads with it.
  const std::string& lastError(int rank) const { return lastErrors_[static_cast<size_t>(rank)]; }

  // The decision for one complete line (exposed for tests).
  RoutedLine route(int rank, StreamKind stream, const std::string& line) const;
  // Log level character of a common/log.h line ('D', 'I', 'W', 'E'), or 0 if not a log line.
  static char logLevelOf(const std::string& line);

 private:
  void remember(int rank, const std::string& line);
  int worldSize_;
  size_t tailLines_;
  std::vector<std::string> partial_;             // [rank * 2 + stream]
  std::vector<std::deque<std::string>> tails_;   // [rank]
  std::vector<std::string> lastErrors_;          // [rank]
};

}  // namespace ddp::runtime
