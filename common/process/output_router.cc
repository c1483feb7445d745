#include "common/process/output_router.h"

namespace ddp::runtime {

OutputRouter::OutputRouter(int worldSize, size_t tailLines)
    : worldSize_(worldSize), tailLines_(tailLines),
      partial_(static_cast<size_t>(worldSize) * 2), tails_(static_cast<size_t>(worldSize)),
      lastErrors_(static_cast<size_t>(worldSize)) {}

char OutputRouter::logLevelOf(const std::string& line) {
  size_t pos = 0;
  if (!line.empty() && line[0] == '[') {
    pos = line.find("] ");
    if (pos == std::string::npos) return 0;
    pos += 2;
  }
  if (pos + 2 > line.size()) return 0;
  const char c = line[pos];
  if ((c == 'D' || c == 'I' || c == 'W' || c == 'E') && line[pos + 1] == ' ' &&
      line.find("] ", pos + 2) != std::string::npos) {
    return c;
  }
  return 0;
}

RoutedLine OutputRouter::route(int rank, StreamKind stream, const std::string& line) const {
  if (stream == StreamKind::kStdout) {
    if (rank == 0) return {RouteTarget::kStdout, line};
    return {RouteTarget::kDrop, line};
  }
  const char level = logLevelOf(line);
  const bool named = !line.empty() && line[0] == '[';
  const std::string prefixed = named ? line : "[rank " + std::to_string(rank) + "] " + line;
  if (level == 'W' || level == 'E' || level == 0) return {RouteTarget::kStderr, prefixed};
  if (level == 'I' && rank == 0) return {RouteTarget::kStderr, prefixed};
  return {RouteTarget::kDrop, line};
}

void OutputRouter::remember(int rank, const std::string& line) {
  auto& t = tails_[static_cast<size_t>(rank)];
  t.push_back(line);
  if (logLevelOf(line) == 'E') lastErrors_[static_cast<size_t>(rank)] = line;
  while (t.size() > tailLines_) t.pop_front();
}

std::vector<RoutedLine> OutputRouter::feed(int rank, StreamKind stream, const char* data, size_t n) {
  std::vector<RoutedLine> out;
  if (rank < 0 || rank >= worldSize_) return out;
  std::string& buf = partial_[static_cast<size_t>(rank) * 2 + (stream == StreamKind::kStderr ? 1 : 0)];
  buf.append(data, n);
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = buf.substr(start, nl - start);
    start = nl + 1;
    remember(rank, line);
    RoutedLine r = route(rank, stream, line);
    if (r.target != RouteTarget::kDrop) out.push_back(std::move(r));
  }
  buf.erase(0, start);
  return out;
}

std::vector<RoutedLine> OutputRouter::flush(int rank, StreamKind stream) {
  std::vector<RoutedLine> out;
  if (rank < 0 || rank >= worldSize_) return out;
  std::string& buf = partial_[static_cast<size_t>(rank) * 2 + (stream == StreamKind::kStderr ? 1 : 0)];
  if (buf.empty()) return out;
  std::string line = std::move(buf);
  buf.clear();
  remember(rank, line);
  RoutedLine r = route(rank, stream, line);
  if (r.target != RouteTarget::kDrop) out.push_back(std::move(r));
  return out;
}

}  // namespace ddp::runtime
