#include "common/checkpoint/checkpoint_lock.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "common/checkpoint/atomic_file.h"
#include "common/secret.h"

namespace ddp::runtime {
namespace {

std::string oneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}


std::string utcTime(int64_t unixMs) {
  const std::time_t t = static_cast<std::time_t>(unixMs / 1000);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return std::to_string(unixMs) + " ms";
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status sysError(const std::string& what, const std::string& path, int err) {
  return failedPrecondition(what + " " + path + ": " + std::strerror(err));
}

// Replaces the file's contents with `text`, durably.
Status writeContents(int fd, const std::string& path, const std::string& text) {
  if (::ftruncate(fd, 0) != 0) return sysError("truncate the checkpoint directory lock", path, errno);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::pwrite(fd, text.data() + off, text.size() - off, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sysError("write the checkpoint directory lock", path, errno);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return sysError("fsync the checkpoint directory lock", path, errno);
  return Status::ok();
}

// Whether `fd` is still the file named `path` (not replaced between open and flock).
bool sameFile(int fd, const std::string& path) {
  struct stat a, b;
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

std::string LockHolder::describe() const {
  return "job '" + job + "' (run " + runId + ", pid " + std::to_string(pid) + " on host " + host + ", since " +
         utcTime(sinceUnixMs) + ")";
}

std::string LockHolder::encode() const {
  return "job: " + oneLine(job) + "\nrun: " + oneLine(runId) + "\npid: " + std::to_string(pid) +
         "\nhost: " + oneLine(host) + "\nsince_unix_ms: " + std::to_string(sinceUnixMs) + "\n";
}

Result<LockHolder> LockHolder::decode(std::string_view text, const std::string& what) {
  LockHolder h;
  bool job = false, run = false, pid = false, host = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) break;  // an unterminated last line is being written
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string value(line.substr(colon + 2));
    auto number = [&](int64_t* out) {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *out);
      return ec == std::errc() && end == value.data() + value.size();
    };
    if (key == "job") {
      h.job = value;
      job = true;
    } else if (key == "run") {
      h.runId = value;
      run = true;
    } else if (key == "pid") {
      if (!number(&h.pid)) return dataLoss(what + ": bad pid '" + value + "'");
      pid = true;
    } else if (key == "host") {
      h.host = value;
      host = true;
    } else if (key == "since_unix_ms") {
      if (!number(&h.sinceUnixMs)) return dataLoss(what + ": bad since_unix_ms '" + value + "'");
    }
  }
  if (!job || !run || !pid || !host) return dataLoss(what + ": incomplete (no job, run, pid or host line)");
  return h;
}

CheckpointLock::CheckpointLock(int fd, std::string path, LockHolder self)
    : fd_(fd), path_(std::move(path)), self_(std::move(self)) {}

CheckpointLock::CheckpointLock(CheckpointLock&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)), self_(std::move(other.self_)) {
  other.fd_ = -1;
}

CheckpointLock& CheckpointLock::operator=(CheckpointLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    self_ = std::move(other.self_);
    other.fd_ = -1;
  }
  return *this;
}

CheckpointLock::~CheckpointLock() { release(); }

void CheckpointLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the description drops the flock
  fd_ = -1;
}

Result<LockHolder> CheckpointLock::readHolder(const std::string& dir) {
  const std::string path = dir + "/" + kLockFileName;
  DDP_ASSIGN_OR_RETURN(std::string text, readFile(path));
  return LockHolder::decode(text, path);
}

Result<CheckpointLock> CheckpointLock::acquire(const std::string& dir, const std::string& job, Deadline deadline) {
  const std::string path = dir + "/" + kLockFileName;
  LockHolder self;
  self.job = job;
  auto run = randomHex(8);
  self.runId = run.isOk() ? *run : std::to_string(::getpid()) + "-" + std::to_string(unixMillisNow());
  self.pid = ::getpid();
  self.host = hostName();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return sysError("cannot open the checkpoint directory lock", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (!sameFile(fd, path)) {  // replaced (directory removed and made again): lock the new one
        ::close(fd);
        continue;
      }
      self.sinceUnixMs = unixMillisNow();
      if (Status st = writeContents(fd, path, self.encode()); !st.isOk()) {
        ::close(fd);
        return st;
      }
      return CheckpointLock(fd, path, std::move(self));
    }
    const int err = errno;
    ::close(fd);
    if (err == EINTR) continue;
    if (err != EWOULDBLOCK) return sysError("cannot lock the checkpoint directory lock", path, err);
    auto holder = readHolder(dir);
    if (holder.isOk() && holder->job != job) {
      return permissionDenied("checkpoint directory " + dir + " is in use by " + holder->describe() + ": job '" +
                                job + "' cannot share it (" + path +
                                " is held); wait until that job ends or use another checkpoint directory");
    }
    if (deadline.expired()) {
      const std::string waited =
          formatDuration(std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - start));
      if (holder.isOk()) {
        return failedPrecondition("checkpoint directory " + dir + " is still locked by another run of " +
                                  holder->describe() + " after waiting " + waited +
                                  ": is this job already running? (the lock " + path +
                                  " is released when that process exits)");
      }
      return failedPrecondition("checkpoint directory " + dir + " is locked (" + path + ") by a holder that could not be read (" +
                                holder.status().message() + ") after waiting " + waited);
    }
    std::this_thread::sleep_for(std::min(kLockPollInterval, deadline.remaining()));
  }
}

}  // namespace ddp::runtime
