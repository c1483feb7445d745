#pragma once
// Logging with a process-wide prefix (job/rank), e.g. "[fmnist r1] W step 10: ...".
// Thread model: thread-safe; each message is written with one write() call under a mutex.

#include <sstream>
#include <string>

namespace ddp::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void setLevel(Level level);
Level level();
// Prefix shown on every line, e.g. setPrefix("fmnist", 1) -> "[fmnist r1]".
void setPrefix(const std::string& job, int rank);
void setPrefix(const std::string& prefix);
std::string prefix();
// Parses "debug|info|warning|error|off"; returns false on anything else.
bool parseLevel(const std::string& text, Level* out);

void write(Level level, const char* file, int line, const std::string& message);

class Line {
 public:
  Line(Level level, const char* file, int line) : level_(level), file_(file), line_(line) {}
  ~Line() { write(level_, file_, line_, os_.str()); }
  template <typename T>
  Line& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  Level level_;
  const char* file_;
  int line_;
  std::ostringstream os_;
};

}  // namespace ddp::log

#define DDP_LOG(severity)                                                            \
  if (::ddp::log::Level::k##severity < ::ddp::log::level()) {                        \
  } else                                                                             \
    ::ddp::log::Line(::ddp::log::Level::k##severity, __FILE__, __LINE__)
