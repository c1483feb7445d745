#include "common/checkpoint/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace ddp::runtime {
namespace {

Status ioError(const std::string& what, const std::string& path, int err) {
  return unavailable(what + " " + path + ": " + std::strerror(err));
}

std::string parentOf(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

// Closes an fd on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

}  // namespace

Status syncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ioError("open directory", path, errno);
  FdCloser closer(fd);
  if (::fsync(fd) != 0) return ioError("fsync directory", path, errno);
  return Status::ok();
}

Status writeFileAtomic(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ioError("create", tmp, errno);
  {
    FdCloser closer(fd);
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(fd, data.data() + off, data.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::unlink(tmp.c_str());
        return ioError("write", tmp, err);
      }
      off += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ioError("fsync", tmp, err);
    }
    int f = closer.release();
    if (::close(f) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return ioError("close", tmp, err);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError("rename to", path, err);
  }
  return syncDir(parentOf(path));
}

Result<std::string> readFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return notFound("no file " + path);
    return ioError("open", path, errno);
  }
  FdCloser closer(fd);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ioError("read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status makeDirs(const std::string& path) {
  if (path.empty()) return invalidArgument("makeDirs: empty path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::ok();
    return failedPrecondition(path + " exists and is not a directory");
  }
  // ENOTDIR (a parent is a file), EACCES (a parent cannot be searched), ...: say so.
  if (errno != ENOENT) return ioError("mkdir", path, errno);
  std::string parent = parentOf(path);
  if (parent != path) DDP_RETURN_IF_ERROR(makeDirs(parent));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ioError("mkdir", path, errno);
  return syncDir(parent);
}

Status removeAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return unavailable("remove " + path + ": " + ec.message());
  return Status::ok();
}

Result<std::vector<std::string>> listDir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return notFound("no directory " + path);
    return ioError("open directory", path, errno);
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool pathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace ddp::runtime
