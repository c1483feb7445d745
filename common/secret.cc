#include "common/secret.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp {

Result<std::string> randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unavailable(std::string("cannot open /dev/urandom: ") + std::strerror(errno));
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::read(fd, raw.data() + got, bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != bytes) return unavailable("cannot read " + std::to_string(bytes) + " bytes from /dev/urandom");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

bool secretEquals(const std::string& expected, const std::string& presented) {
  unsigned diff = static_cast<unsigned>(expected.size() ^ presented.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= static_cast<unsigned char>(expected[i]) ^ p;
  }
  return diff == 0 && !expected.empty();
}

}  // namespace ddp
