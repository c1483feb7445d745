#include "controller/launch/worker_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ddp::controller {
namespace {

constexpr size_t kScanChunk = 64 * 1024;
constexpr size_t kCopyChunk = 1 << 20;
constexpr int64_t kLastLinesMaxBytes = 1 << 20;  // lastLines never reads more than this

int64_t fileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

int64_t preadFile(const std::string& path, char* buf, size_t len, int64_t at) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n;
  do {
    n = ::pread(fd, buf, len, at);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n < 0 ? 0 : n;
}

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

WorkerLog::WorkerLog(std::string path) : path_(std::move(path)) {
  rotatedStart_ = 0;
  base_ = fileSize(rotatedPath());
}

int64_t WorkerLog::liveSizeLocked() const { return fileSize(path_); }

int64_t WorkerLog::beginOffset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rotatedStart_;
}

int64_t WorkerLog::endOffset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return base_ + liveSizeLocked();
}

int64_t WorkerLog::readAtLocked(int64_t offset, char* buf, size_t len) const {
  if (offset < rotatedStart_) return 0;
  if (offset < base_) {
    len = std::min<size_t>(len, static_cast<size_t>(base_ - offset));
    return preadFile(rotatedPath(), buf, len, offset - rotatedStart_);
  }
  return preadFile(path_, buf, len, offset - base_);
}

std::string WorkerLog::readFrom(int64_t& offset, size_t maxBytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  offset = std::max(offset, rotatedStart_);
  std::string out(maxBytes, '\0');
  int64_t n = readAtLocked(offset, out.data(), maxBytes);
  if (n <= 0 && offset < base_) {
    offset = base_;  // .1 is gone or shorter than recorded: continue with the live file
    n = readAtLocked(offset, out.data(), maxBytes);
  }
  if (n <= 0) {
    // Truncated behind our back (not by rotateIfOver): resume at its current end.
    const int64_t end = base_ + liveSizeLocked();
    if (offset > end) offset = end;
    return {};
  }
  offset += n;
  out.resize(static_cast<size_t>(n));
  return out;
}

int64_t WorkerLog::tailOffsetLocked(int64_t lines, int64_t floor) const {
  const int64_t begin = std::max(floor, rotatedStart_);
  const int64_t end = base_ + liveSizeLocked();
  if (lines < 0 || begin >= end) return std::min(begin, end);
  if (lines == 0) return end;
  std::vector<char> buf(kScanChunk);
  int64_t pos = end, count = 0;
  while (pos > begin) {
    int64_t chunkStart = std::max(begin, pos - static_cast<int64_t>(kScanChunk));
    if (chunkStart < base_ && pos > base_) chunkStart = base_;  // one file per read
    const size_t len = static_cast<size_t>(pos - chunkStart);
    if (readAtLocked(chunkStart, buf.data(), len) != static_cast<int64_t>(len)) return pos;
    for (size_t i = len; i-- > 0;) {
      const int64_t at = chunkStart + static_cast<int64_t>(i);
      if (buf[i] != '\n' || at == end - 1) continue;  // a final '\n' ends the last line
      if (++count == lines) return at + 1;
    }
    pos = chunkStart;
  }
  return begin;
}

int64_t WorkerLog::tailOffset(int64_t lines, int64_t floor) const {
  std::lock_guard<std::mutex> lock(mu_);
  return tailOffsetLocked(lines, floor);
}

std::vector<std::string> WorkerLog::lastLines(size_t lines, int64_t floor) const {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t end = base_ + liveSizeLocked();
    int64_t off = std::max(tailOffsetLocked(static_cast<int64_t>(lines), floor), end - kLastLinesMaxBytes);
    std::vector<char> buf(kScanChunk);
    while (off < end) {
      const int64_t n = readAtLocked(off, buf.data(), std::min<size_t>(buf.size(), static_cast<size_t>(end - off)));
      if (n <= 0) break;
      text.append(buf.data(), static_cast<size_t>(n));
      off += n;
    }
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (out.size() > lines) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(lines));
  return out;
}

Result<bool> WorkerLog::rotateIfOver(int64_t maxBytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Result<bool>(false) : unavailable("open " + path_ + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= maxBytes) {
    ::close(fd);
    return false;
  }
  const std::string tmp = rotatedPath() + ".tmp";
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    const int e = errno;
    ::close(fd);
    return unavailable("create " + tmp + ": " + std::strerror(e));
  }
  // Copy from a line start in the last half to the end (chasing the writer for a bounded
  // while), then truncate at once: Note [Log rotation].
  int64_t keepFrom = st.st_size - maxBytes / 2, pos = keepFrom;
  const int64_t chaseLimit = st.st_size + maxBytes / 2;  // .1 stays within maxBytes
  bool aligned = keepFrom == 0, copied = true;
  std::vector<char> buf(kCopyChunk);
  while (pos < chaseLimit) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t skip = 0;
    if (!aligned) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data(), '\n', static_cast<size_t>(n)));
      skip = nl == nullptr ? static_cast<size_t>(n) : static_cast<size_t>(nl - buf.data()) + 1;
      aligned = nl != nullptr;
      keepFrom = pos + static_cast<int64_t>(skip);
    }
    copied = copied && writeAll(out, buf.data() + skip, static_cast<size_t>(n) - skip);
    pos += n;
  }
  const bool truncated = ::ftruncate(fd, 0) == 0;
  const int truncErrno = errno;
  ::close(fd);
  ::close(out);
  if (!truncated) {
    ::unlink(tmp.c_str());
    return unavailable("truncate " + path_ + ": " + std::strerror(truncErrno));
  }
  const bool kept = copied && ::rename(tmp.c_str(), rotatedPath().c_str()) == 0;
  if (!kept) {  // keep nothing rather than an old .1 the offsets no longer describe
    ::unlink(tmp.c_str());
    ::unlink(rotatedPath().c_str());
  }
  const int64_t oldBase = base_;
  base_ = oldBase + pos;
  rotatedStart_ = kept ? oldBase + keepFrom : base_;
  return true;
}

}  // namespace ddp::controller
