#include "common/tokens/token_file.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace ddp::tokens {

static_assert(std::endian::native == std::endian::little,
              "token files are little-endian and are read in place (Note [Token file format])");

namespace {

constexpr size_t kWriteChunkTokens = 1 << 16;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status openError(const std::string& path, int err) {
  std::string m = path + ": cannot open: " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return notFound(path + ": no such file");
  if (err == EACCES || err == EPERM) return permissionDenied(m);
  return unavailable(m);
}

Status ioError(const std::string& what, const std::string& path, int err) {
  return unavailable(path + ": " + what + ": " + std::strerror(err));
}

bool hasGlobChars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// Reads exactly n bytes at offset; false on a short read or error (errno set, 0 for short).
bool preadAll(int fd, void* buf, size_t n, off_t offset) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = 0;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
  return true;
}

bool writeAll(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string parentOf(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string rawHint() { return " (a file without the llm.c header needs its dtype declared: uint16 or uint32)"; }

// The first three ints of an llm.c header.
struct Header {
  int32_t magic = 0;
  int32_t version = 0;
  int32_t count = 0;
};

Result<Header> readHeader(int fd, const std::string& path) {
  int32_t h[3];
  if (!preadAll(fd, h, sizeof(h), 0)) {
    if (errno != 0) return ioError("read", path, errno);
    return invalidArgument(path + ": too short for a header");
  }
  return Header{h[0], h[1], h[2]};
}

Result<TokenFileInfo> inspectLlmc(int fd, const std::string& path, int64_t size) {
  if (size < kTokenHeaderBytes) {
    return invalidArgument(path + ": holds " + std::to_string(size) + " bytes, less than the " +
                           std::to_string(kTokenHeaderBytes) + "-byte llm.c header" + rawHint());
  }
  DDP_ASSIGN_OR_RETURN(Header h, readHeader(fd, path));
  if (h.magic != kTokenFileMagic) {
    return invalidArgument(path + ": not an llm.c token file: magic " + std::to_string(h.magic) + ", expected " +
                           std::to_string(kTokenFileMagic) + rawHint());
  }
  if (h.version != 1 && h.version != 2) {
    return invalidArgument(path + ": llm.c header version " + std::to_string(h.version) +
                           " is not supported (1: uint16 tokens, 2: uint32 tokens)");
  }
  if (h.count < 0) return invalidArgument(path + ": header says " + std::to_string(h.count) + " tokens");
  const auto dtype = static_cast<TokenDType>(h.version);
  const int64_t expected = int64_t{h.count} * tokenDTypeBytes(dtype);
  const int64_t held = size - kTokenHeaderBytes;
  if (held != expected) {
    return invalidArgument(path + ": header says " + std::to_string(h.count) + " " + tokenDTypeName(dtype) +
                           " tokens (" + std::to_string(expected) + " bytes after the header) but the file holds " +
                           std::to_string(held) + " bytes after the header");
  }
  return TokenFileInfo{path, dtype, int64_t{h.count}, kTokenHeaderBytes};
}

Result<TokenFileInfo> inspectRaw(int fd, const std::string& path, int64_t size, TokenDType dtype) {
  const int64_t width = tokenDTypeBytes(dtype);
  if (size % width != 0) {
    return invalidArgument(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                           tokenDTypeName(dtype) + " tokens (" + std::to_string(width) + " bytes each)");
  }
  if (size >= kTokenHeaderBytes) {
    DDP_ASSIGN_OR_RETURN(Header h, readHeader(fd, path));
    if (h.magic == kTokenFileMagic && (h.version == 1 || h.version == 2) && h.count >= 0 &&
        size == kTokenHeaderBytes + int64_t{h.count} * tokenDTypeBytes(static_cast<TokenDType>(h.version))) {
      return invalidArgument(path + ": has an llm.c header (magic " + std::to_string(kTokenFileMagic) +
                             ") but was declared a raw " + tokenDTypeName(dtype) +
                             " file: leave the dtype out to read it by its header");
    }
  }
  return TokenFileInfo{path, dtype, size / width, 0};
}

}  // namespace

const char* tokenDTypeName(TokenDType dtype) { return dtype == TokenDType::kUint16 ? "uint16" : "uint32"; }

Result<TokenDType> parseTokenDType(std::string_view name) {
  if (name == "uint16") return TokenDType::kUint16;
  if (name == "uint32") return TokenDType::kUint32;
  return invalidArgument("token dtype '" + std::string(name) + "' is not uint16 or uint32");
}

int64_t tokenDTypeBytes(TokenDType dtype) { return dtype == TokenDType::kUint16 ? 2 : 4; }

uint64_t tokenDTypeMax(TokenDType dtype) {
  return dtype == TokenDType::kUint16 ? std::numeric_limits<uint16_t>::max() : std::numeric_limits<uint32_t>::max();
}

Result<std::vector<std::string>> expandTokenPaths(const std::string& pattern) {
  if (pattern.empty()) return invalidArgument("token file pattern is empty");
  std::vector<std::string> paths;
  if (!hasGlobChars(pattern)) {
    paths.push_back(pattern);
  } else {
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (rc == GLOB_NOSPACE) return resourceExhausted("expanding '" + pattern + "': out of memory");
    if (rc != 0 && rc != GLOB_NOMATCH) return unavailable("expanding '" + pattern + "': read error");
    std::sort(paths.begin(), paths.end());
  }
  if (paths.empty()) return notFound("no token file matches '" + pattern + "'");
  for (const std::string& p : paths) {
    struct stat st{};
    if (::stat(p.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        return notFound(hasGlobChars(pattern) ? p + ": no such file (matched by '" + pattern + "')"
                                              : "no token file matches '" + pattern + "'");
      }
      return ioError("stat", p, errno);
    }
    if (S_ISDIR(st.st_mode)) {
      return invalidArgument(p + " is a directory: name its token files (a path or a glob such as " + p + "/*.bin)");
    }
  }
  return paths;
}

Result<TokenFileInfo> inspectTokenFile(const std::string& path, std::optional<TokenDType> rawDType) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return openError(path, errno);
  if (S_ISDIR(st.st_mode)) return invalidArgument(path + " is a directory, not a token file");
  if (!S_ISREG(st.st_mode)) return invalidArgument(path + " is not a regular file");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return openError(path, errno);
  if (::fstat(fd.get(), &st) != 0) return ioError("stat", path, errno);
  const int64_t size = st.st_size;
  return rawDType ? inspectRaw(fd.get(), path, size, *rawDType) : inspectLlmc(fd.get(), path, size);
}

Result<std::vector<TokenFileInfo>> inspectTokenSource(const std::string& pattern,
                                                      std::optional<TokenDType> rawDType) {
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> paths, expandTokenPaths(pattern));
  std::vector<TokenFileInfo> infos;
  infos.reserve(paths.size());
  for (const std::string& p : paths) {
    DDP_ASSIGN_OR_RETURN(TokenFileInfo info, inspectTokenFile(p, rawDType));
    infos.push_back(std::move(info));
  }
  return infos;
}

Status checkTokenSource(const std::string& pattern, std::optional<TokenDType> rawDType, int64_t windowTokens) {
  if (windowTokens < 2) {
    return invalidArgument("a window of " + std::to_string(windowTokens) +
                           " tokens is too short: it is contextLength + 1, contextLength >= 1");
  }
  DDP_ASSIGN_OR_RETURN(std::vector<TokenFileInfo> infos, inspectTokenSource(pattern, rawDType));
  int64_t total = 0;
  for (const TokenFileInfo& i : infos) total += i.tokens;
  if (total < windowTokens) {
    return invalidArgument("'" + pattern + "' holds " + std::to_string(total) + " tokens in " +
                           std::to_string(infos.size()) + (infos.size() == 1 ? " file" : " files") +
                           ", fewer than one window of " + std::to_string(windowTokens) +
                           " tokens (contextLength + 1)");
  }
  return Status::ok();
}

Status writeTokenFile(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalidArgument(path + ": " + std::to_string(tokens.size()) +
                           " tokens is more than an llm.c header's int32 count holds");
  }
  const uint64_t max = tokenDTypeMax(dtype);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<uint64_t>(tokens[i]) > max) {
      return invalidArgument(path + ": token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                             " does not fit " + tokenDTypeName(dtype) + " (0.." + std::to_string(max) + ")");
    }
  }
  int32_t header[kTokenHeaderInts] = {};
  header[0] = kTokenFileMagic;
  header[1] = static_cast<int32_t>(dtype);
  header[2] = static_cast<int32_t>(tokens.size());

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ioError("create", tmp, errno);
  auto fail = [&](const char* what) {
    Status s = ioError(what, tmp, errno);
    ::unlink(tmp.c_str());
    return s;
  };
  if (!writeAll(fd.get(), header, sizeof(header))) return fail("write");
  std::vector<char> chunk(kWriteChunkTokens * static_cast<size_t>(tokenDTypeBytes(dtype)));
  for (size_t at = 0; at < tokens.size(); at += kWriteChunkTokens) {
    const size_t n = std::min(kWriteChunkTokens, tokens.size() - at);
    for (size_t i = 0; i < n; ++i) {
      if (dtype == TokenDType::kUint16) {
        const auto v = static_cast<uint16_t>(tokens[at + i]);
        std::memcpy(chunk.data() + 2 * i, &v, 2);
      } else {
        const auto v = static_cast<uint32_t>(tokens[at + i]);
        std::memcpy(chunk.data() + 4 * i, &v, 4);
      }
    }
    if (!writeAll(fd.get(), chunk.data(), n * static_cast<size_t>(tokenDTypeBytes(dtype)))) return fail("write");
  }
  if (::fsync(fd.get()) != 0) return fail("fsync");
  if (::close(fd.release()) != 0) return fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename to its final name");
  Fd dir(::open(parentOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());  // the rename's durability; the file is complete either way
  return Status::ok();
}

}  // namespace ddp::tokens
