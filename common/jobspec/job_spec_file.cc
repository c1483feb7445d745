// loadJobSpecFile(): reads a job file once, bounded, and parses it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/jobspec/job_spec.h"

namespace ddp {
namespace {

// Owns a file descriptor; closes it on destruction.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status cannotRead(const char* what) {
  return notFound(std::string("cannot read job file (") + what + "): " + std::strerror(errno));
}

// Ok for a regular file or a pipe / FIFO (/dev/stdin, <(...)); InvalidArgument otherwise.
Status checkFileKind(const struct stat& st) {
  const mode_t m = st.st_mode;
  if (S_ISREG(m) || S_ISFIFO(m)) return Status::ok();
  if (S_ISDIR(m)) return invalidArgument("is a directory, not a job file");
  const char* kind = S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
                     : S_ISSOCK(m) ? "a socket" : "a special file";
  return invalidArgument(std::string("is not a regular file (it is ") + kind +
                         "); a job file is a regular file or a pipe");
}

Status tooLarge() {
  return invalidArgument("is larger than " + std::to_string(kMaxJobDocumentBytes) +
                         " bytes, the limit on a job document (kMaxJobDocumentBytes)");
}

// The contents of `path`, read once: at most kMaxJobDocumentBytes, from a regular file or a pipe.
Result<std::string> readJobDocument(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return cannotRead("stat");
  DDP_RETURN_IF_ERROR(checkFileKind(st));  // before opening it: opening a device can have effects
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return cannotRead("open");
  if (::fstat(fd.get(), &st) != 0) return cannotRead("fstat");
  DDP_RETURN_IF_ERROR(checkFileKind(st));  // what was opened, should the path have changed
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxJobDocumentBytes) return tooLarge();
  // One byte more than the limit tells a document at the limit from a longer one (a pipe has
  // no size; a regular file may grow while it is read).
  std::string text(kMaxJobDocumentBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return cannotRead("read");
    }
    got += static_cast<size_t>(n);
  }
  if (got > kMaxJobDocumentBytes) return tooLarge();
  text.resize(got);
  return text;
}

}  // namespace

Result<JobSpec> loadJobSpecFile(const std::string& path, std::vector<SpecError>* errors) {
  auto text = readJobDocument(path);
  if (!text.isOk()) {
    if (errors) *errors = {SpecError{"", text.status().message()}};
    return text.status().withContext(path);
  }
  auto r = parseJobSpec(*text, errors);
  if (!r.isOk()) return r.status().withContext(path);
  return r;
}

}  // namespace ddp
