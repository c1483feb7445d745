#include "common/tokens/byte_tokens.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace ddp::tokens {
namespace {

Status readError(const std::string& path, int err) {
  const std::string m = path + ": cannot read: " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return notFound(path + ": no such file");
  if (err == EACCES || err == EPERM) return permissionDenied(m);
  if (err == EISDIR) return invalidArgument(path + " is a directory, not a text file");
  return unavailable(m);
}

Status appendBytes(const std::string& path, std::vector<int32_t>* out) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return readError(path, errno);
  if (S_ISDIR(st.st_mode)) return readError(path, EISDIR);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return readError(path, errno);
  if (S_ISREG(st.st_mode)) out->reserve(out->size() + static_cast<size_t>(st.st_size));
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out->insert(out->end(), buf, buf + n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) return readError(path, err);
  return Status::ok();
}

}  // namespace

Result<std::vector<int32_t>> bytesToTokens(const std::vector<std::string>& files) {
  std::vector<int32_t> tokens;
  for (const std::string& path : files) DDP_RETURN_IF_ERROR(appendBytes(path, &tokens));
  return tokens;
}

int64_t valTokenCount(int64_t total, double fraction) {
  if (total <= 0 || !(fraction > 0)) return 0;
  if (fraction >= 1) return total;
  return static_cast<int64_t>(std::floor(static_cast<double>(total) * fraction));
}

}  // namespace ddp::tokens
