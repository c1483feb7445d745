#include "common/tokens/mapped_tokens.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace ddp::tokens {
namespace {

// Maps `info.path` read-only after checking that it still has the size its inspection implied.
Result<std::pair<const unsigned char*, size_t>> mapFile(const TokenFileInfo& info) {
  const int64_t expected = info.headerBytes + info.tokens * tokenDTypeBytes(info.dtype);
  int fd = ::open(info.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unavailable(info.path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || st.st_size != expected) {
    ::close(fd);
    return unavailable(info.path + ": changed while it was being opened (expected " + std::to_string(expected) +
                       " bytes)");
  }
  if (expected == 0) {
    ::close(fd);
    return std::pair<const unsigned char*, size_t>{nullptr, 0};
  }
  void* p = ::mmap(nullptr, static_cast<size_t>(expected), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return unavailable(info.path + ": mmap: " + std::strerror(err));
  return std::pair<const unsigned char*, size_t>{static_cast<const unsigned char*>(p), static_cast<size_t>(expected)};
}

}  // namespace

Result<MappedTokens> MappedTokens::open(const std::string& pattern, std::optional<TokenDType> rawDType) {
  DDP_ASSIGN_OR_RETURN(std::vector<TokenFileInfo> infos, inspectTokenSource(pattern, rawDType));
  MappedTokens m;
  m.maps_.reserve(infos.size());
  for (const TokenFileInfo& info : infos) {
    auto mapped = mapFile(info);
    if (!mapped.isOk()) return mapped.status();  // m's destructor unmaps the files mapped so far
    m.maps_.push_back({mapped->first, mapped->second, m.size_});
    m.size_ += info.tokens;
  }
  m.infos_ = std::move(infos);
  return m;
}

MappedTokens::MappedTokens(MappedTokens&& other) noexcept
    : infos_(std::move(other.infos_)), maps_(std::exchange(other.maps_, {})), size_(std::exchange(other.size_, 0)) {}

MappedTokens& MappedTokens::operator=(MappedTokens&& other) noexcept {
  if (this != &other) {
    unmapAll();
    infos_ = std::move(other.infos_);
    maps_ = std::exchange(other.maps_, {});
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedTokens::~MappedTokens() { unmapAll(); }

void MappedTokens::unmapAll() {
  for (const Mapping& m : maps_) {
    if (m.length > 0) ::munmap(const_cast<unsigned char*>(m.data), m.length);
  }
  maps_.clear();
  infos_.clear();
  size_ = 0;
}

Status MappedTokens::read(int64_t start, int64_t n, int64_t vocabSize, int32_t* out) const {
  if (start < 0 || n < 0 || start > size_ || n > size_ - start) {
    return outOfRange("tokens [" + std::to_string(start) + ", " + std::to_string(start + n) + ") are not inside [0, " +
                      std::to_string(size_) + ")");
  }
  if (vocabSize < 1 || vocabSize > int64_t{std::numeric_limits<int32_t>::max()} + 1) {
    return invalidArgument("vocabulary size " + std::to_string(vocabSize) + " is not in [1, 2^31]");
  }
  // The file holding `start`: the last whose first token is <= start (skipping empty files).
  auto it = std::upper_bound(maps_.begin(), maps_.end(), start,
                             [](int64_t s, const Mapping& m) { return s < m.firstToken; });
  size_t f = static_cast<size_t>(std::distance(maps_.begin(), it)) - 1;
  int64_t done = 0;
  while (done < n) {
    while (start + done >= maps_[f].firstToken + infos_[f].tokens) ++f;  // past this file's end
    const TokenFileInfo& info = infos_[f];
    const Mapping& m = maps_[f];
    const int64_t local = start + done - m.firstToken;
    const int64_t count = std::min(n - done, info.tokens - local);
    const unsigned char* base = m.data + info.headerBytes;
    for (int64_t i = 0; i < count; ++i) {
      uint32_t v;
      if (info.dtype == TokenDType::kUint16) {
        uint16_t h;
        std::memcpy(&h, base + 2 * (local + i), 2);
        v = h;
      } else {
        std::memcpy(&v, base + 4 * (local + i), 4);
      }
      if (int64_t{v} >= vocabSize) {
        return invalidArgument(info.path + ": token " + std::to_string(v) + " at index " + std::to_string(local + i) +
                               " of the file is outside the vocabulary of " + std::to_string(vocabSize) +
                               " tokens");
      }
      out[done + i] = static_cast<int32_t>(v);
    }
    done += count;
  }
  return Status::ok();
}

}  // namespace ddp::tokens
