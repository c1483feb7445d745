#include "common/clock.h"

#include <cstdio>

namespace ddp {

const SystemClock& SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

std::string formatDuration(Duration d) {
  char buf[64];
  const double s = std::chrono::duration<double>(d).count();
  if (s >= 60.0) {
    std::snprintf(buf, sizeof buf, "%.1fm", s / 60.0);
  } else if (s >= 1.0) {
    std::snprintf(buf, sizeof buf, "%.3gs", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3gms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3gus", s * 1e6);
  }
  return buf;
}

int64_t unixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace ddp
