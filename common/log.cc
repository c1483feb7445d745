#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <mutex>

namespace ddp::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::mutex g_mu;  // guards g_prefix and the write itself
std::string g_prefix;  // guarded by g_mu

char levelChar(Level l) {
  switch (l) {
    case Level::kDebug: return 'D';
    case Level::kInfo: return 'I';
    case Level::kWarning: return 'W';
    case Level::kError: return 'E';
    default: return '?';
  }
}
}  // namespace

void setLevel(Level level) { g_level.store(level); }
Level level() { return g_level.load(); }

void setPrefix(const std::string& job, int rank) {
  setPrefix("[" + job + " r" + std::to_string(rank) + "]");
}
void setPrefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_prefix = prefix;
}
std::string prefix() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_prefix;
}

bool parseLevel(const std::string& t, Level* out) {
  if (t == "debug") *out = Level::kDebug;
  else if (t == "info") *out = Level::kInfo;
  else if (t == "warning" || t == "warn") *out = Level::kWarning;
  else if (t == "error") *out = Level::kError;
  else if (t == "off") *out = Level::kOff;
  else return false;
  return true;
}

namespace {
const bool g_withTime = [] {
  const char* v = std::getenv("DDP_LOG_TIME");
  return v != nullptr && std::string(v) == "1";
}();
}  // namespace

void write(Level level, const char* file, int line, const std::string& message) {
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  std::string out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_prefix.empty()) {
      out += g_prefix;
      out += ' ';
    }
  }
  out += levelChar(level);
  out += ' ';
  if (g_withTime) {
    // DDP_LOG_TIME=1: wall-clock time of day with milliseconds (UTC), to line up the logs of
    // several processes.
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    tm t{};
    ::gmtime_r(&ts.tv_sec, &t);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03ld ", t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000000);
    out += buf;
  }
  out += base;
  out += ':';
  out += std::to_string(line);
  out += "] ";
  out += message;
  out += '\n';
  std::lock_guard<std::mutex> lock(g_mu);
  ssize_t n = ::write(STDERR_FILENO, out.data(), out.size());
  (void)n;
}

}  // namespace ddp::log
