#include "controller/launch/log_stream.h"

#include <algorithm>
#include <limits>
#include <thread>

namespace ddp::controller {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxReturn = 256 * 1024;  // a read returns about this much at most

Status endOfLog() { return outOfRange("end of log"); }

void sleepUntilNextPoll(Deadline deadline) {
  std::this_thread::sleep_for(std::min<Duration>(kLogPollInterval, deadline.remaining()));
}

}  // namespace

WorkerLogStream::WorkerLogStream(std::shared_ptr<const WorkerLog> log, LogOptions options, std::string linePrefix)
    : log_(std::move(log)), follow_(options.follow), prefix_(std::move(linePrefix)) {
  offset_ = log_->tailOffset(options.tailLines, 0);
  limit_ = follow_ ? std::numeric_limits<int64_t>::max() : log_->endOffset();
}

std::string WorkerLogStream::takeLines(size_t upTo) {
  // pending_[upTo] is a '\n' (or upTo == pending_.size()): returns the lines before it.
  std::string out;
  size_t start = 0;
  for (;;) {
    size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos || nl > upTo) nl = upTo;
    out += prefix_;
    out.append(pending_, start, nl - start);
    out += '\n';
    if (nl >= upTo) break;
    start = nl + 1;
  }
  pending_.erase(0, std::min(upTo + 1, pending_.size()));
  return out;
}

std::string WorkerLogStream::poll() {
  if (done_) return {};
  // Seen before draining: a writer gone before we read everything ends the stream afterwards.
  const bool wasFinished = log_->finished();
  while (pending_.size() < kMaxReturn && offset_ < limit_) {
    std::string chunk = log_->readFrom(offset_, kReadChunk);
    if (chunk.empty()) break;
    if (offset_ > limit_) {
      chunk.resize(chunk.size() - static_cast<size_t>(offset_ - limit_));
      offset_ = limit_;
    }
    pending_ += chunk;
  }
  const size_t lastNewline = pending_.rfind('\n');
  if (pending_.size() >= kMaxReturn && lastNewline == std::string::npos) {
    return takeLines(pending_.size());  // an overlong line comes out in pieces
  }
  if (lastNewline != std::string::npos) return takeLines(lastNewline);
  const bool atEnd = !follow_ ? offset_ >= limit_ || log_->endOffset() <= offset_ : wasFinished;
  if (!atEnd) return {};
  done_ = true;
  return pending_.empty() ? std::string() : takeLines(pending_.size());
}

Result<std::string> WorkerLogStream::read(Deadline deadline) {
  for (;;) {
    if (done_) return endOfLog();
    std::string text = poll();
    if (!text.empty()) return text;
    if (done_) return endOfLog();
    if (deadline.expired()) return std::string();
    sleepUntilNextPoll(deadline);
  }
}

bool MergedLogStream::done() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->done(); });
}

Result<std::string> MergedLogStream::read(Deadline deadline) {
  for (;;) {
    if (done()) return endOfLog();
    std::string text;
    for (auto& p : parts_) text += p->poll();
    if (!text.empty()) return text;
    if (done()) return endOfLog();
    if (deadline.expired()) return std::string();
    sleepUntilNextPoll(deadline);
  }
}

}  // namespace ddp::controller
