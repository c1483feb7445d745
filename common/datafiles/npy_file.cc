// Note [NPY files] (npy_file.h).
#include "common/datafiles/npy_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace ddp::datafiles {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr int64_t kMaxHeaderBytes = 1 << 20;

struct DTypeName {
  const char* name;
  NpyDType type;
};
constexpr DTypeName kDTypes[] = {{"<f4", NpyDType::kF32}, {"<f8", NpyDType::kF64}, {"<i4", NpyDType::kI32},
                                 {"<i8", NpyDType::kI64}, {"|u1", NpyDType::kU8}};

Status bad(const std::string& path, const std::string& what) {
  return invalidArgument(path + ": not a supported NPY file: " + what);
}

void skipSpaces(const std::string& s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n')) ++*i;
}

// The position just after "'key':" in the dict literal, or npos.
size_t valueOf(const std::string& text, const char* key) {
  const std::string quoted = std::string("'") + key + "'";
  size_t at = text.find(quoted);
  if (at == std::string::npos) return at;
  at += quoted.size();
  skipSpaces(text, &at);
  if (at >= text.size() || text[at] != ':') return std::string::npos;
  ++at;
  skipSpaces(text, &at);
  return at;
}

Result<std::vector<int64_t>> parseShape(const std::string& path, const std::string& text, size_t at) {
  if (at >= text.size() || text[at] != '(') return bad(path, "'shape' is not a tuple");
  const size_t close = text.find(')', at);
  if (close == std::string::npos) return bad(path, "'shape' is not a tuple");
  std::vector<int64_t> shape;
  size_t i = at + 1;
  while (true) {
    skipSpaces(text, &i);
    if (i >= close) break;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str() + i, &end, 10);
    const size_t next = static_cast<size_t>(end - text.c_str());
    if (next == i || next > close || v < 0) {
      return bad(path, "'shape' " + text.substr(at, close - at + 1) + " is not a tuple of sizes");
    }
    shape.push_back(v);
    i = next;
    skipSpaces(text, &i);
    if (i < close && text[i] == ',') ++i;
  }
  return shape;
}

std::string tupleText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

const char* npyDTypeName(NpyDType t) {
  for (const auto& d : kDTypes) {
    if (d.type == t) return d.name;
  }
  return "?";
}

int64_t npyDTypeBytes(NpyDType t) {
  switch (t) {
    case NpyDType::kF32: case NpyDType::kI32: return 4;
    case NpyDType::kF64: case NpyDType::kI64: return 8;
    case NpyDType::kU8: return 1;
  }
  return 1;
}

bool npyDTypeIsFloat(NpyDType t) { return t == NpyDType::kF32 || t == NpyDType::kF64; }

int64_t NpyHeader::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<NpyHeader> parseNpyHeaderText(const std::string& path, const std::string& text, int64_t dataOffset) {
  NpyHeader h;
  h.dataOffset = dataOffset;
  size_t at = valueOf(text, "descr");
  if (at == std::string::npos || at >= text.size() || text[at] != '\'') return bad(path, "no 'descr' in the header");
  const size_t end = text.find('\'', at + 1);
  if (end == std::string::npos) return bad(path, "no 'descr' in the header");
  const std::string descr = text.substr(at + 1, end - at - 1);
  bool known = false;
  for (const auto& d : kDTypes) {
    if (descr == d.name) {
      h.dtype = d.type;
      known = true;
    }
  }
  if (!known) {
    return bad(path, "dtype '" + descr + "' (supported: '<f4', '<f8', '|u1' features; '<i4', '<i8' class targets; "
                     "'<f4', '<f8' float targets; little-endian)");
  }
  at = valueOf(text, "fortran_order");
  if (at == std::string::npos) return bad(path, "no 'fortran_order' in the header");
  if (text.compare(at, 4, "True") == 0) {
    return bad(path, "fortran_order is True: save the array in C order (numpy.ascontiguousarray)");
  }
  if (text.compare(at, 5, "False") != 0) return bad(path, "'fortran_order' is neither True nor False");
  at = valueOf(text, "shape");
  if (at == std::string::npos) return bad(path, "no 'shape' in the header");
  DDP_ASSIGN_OR_RETURN(h.shape, parseShape(path, text, at));
  return h;
}

Result<NpyHeader> readNpyHeader(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return notFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalidArgument(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return permissionDenied(path + ": cannot be read: " + std::strerror(errno));
  char pre[12] = {};
  in.read(pre, 10);
  if (in.gcount() < 10 || std::memcmp(pre, kMagic, kMagicBytes) != 0) {
    return bad(path, "it does not start with the NPY magic \\x93NUMPY");
  }
  const int major = static_cast<unsigned char>(pre[6]);
  int64_t headerLen = 0;
  int64_t offset = 10;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(pre[8]) | (static_cast<unsigned char>(pre[9]) << 8);
  } else if (major == 2 || major == 3) {
    in.read(pre + 10, 2);
    if (in.gcount() < 2) return bad(path, "truncated header");
    for (int i = 3; i >= 0; --i) headerLen = (headerLen << 8) | static_cast<unsigned char>(pre[8 + i]);
    offset = 12;
  } else {
    return bad(path, "format version " + std::to_string(major) + " (1, 2 and 3 are read)");
  }
  if (headerLen <= 0 || headerLen > kMaxHeaderBytes) return bad(path, "header length " + std::to_string(headerLen));
  std::string text(static_cast<size_t>(headerLen), '\0');
  in.read(text.data(), headerLen);
  if (in.gcount() != headerLen) return bad(path, "truncated header");
  DDP_ASSIGN_OR_RETURN(NpyHeader h, parseNpyHeaderText(path, text, offset + headerLen));
  const int64_t want = h.dataOffset + h.count() * npyDTypeBytes(h.dtype);
  if (st.st_size != want) {
    return invalidArgument(path + ": the header says shape " + tupleText(h.shape) + " of " + npyDTypeName(h.dtype) +
                           ", " + std::to_string(want) + " bytes with the header, but the file has " +
                           std::to_string(st.st_size) + (st.st_size < want ? " (truncated)" : ""));
  }
  return h;
}

Result<MappedNpy> MappedNpy::open(const std::string& path) {
  DDP_ASSIGN_OR_RETURN(NpyHeader h, readNpyHeader(path));
  MappedNpy m;
  m.path_ = path;
  m.header_ = h;
  const int64_t length = h.dataOffset + h.count() * npyDTypeBytes(h.dtype);
  if (h.count() == 0) return m;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unavailable(path + ": cannot open: " + std::strerror(errno));
  void* p = ::mmap(nullptr, static_cast<size_t>(length), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return unavailable(path + ": mmap: " + std::strerror(err));
  m.base_ = static_cast<const unsigned char*>(p);
  m.length_ = static_cast<size_t>(length);
  return m;
}

MappedNpy::MappedNpy(MappedNpy&& o) noexcept
    : path_(std::move(o.path_)), header_(std::move(o.header_)), base_(std::exchange(o.base_, nullptr)),
      length_(std::exchange(o.length_, 0)) {}

MappedNpy& MappedNpy::operator=(MappedNpy&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(const_cast<unsigned char*>(base_), length_);
    path_ = std::move(o.path_);
    header_ = std::move(o.header_);
    base_ = std::exchange(o.base_, nullptr);
    length_ = std::exchange(o.length_, 0);
  }
  return *this;
}

MappedNpy::~MappedNpy() {
  if (base_ != nullptr) ::munmap(const_cast<unsigned char*>(base_), length_);
}

double MappedNpy::at(int64_t i) const {
  const unsigned char* p = data() + i * npyDTypeBytes(header_.dtype);
  switch (header_.dtype) {
    case NpyDType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case NpyDType::kF64: { double v; std::memcpy(&v, p, 8); return v; }
    case NpyDType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case NpyDType::kI64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case NpyDType::kU8: return *p;
  }
  return 0;
}

void MappedNpy::toFloat(int64_t first, int64_t n, float* out) const {
  const unsigned char* p = data() + first * npyDTypeBytes(header_.dtype);
  switch (header_.dtype) {
    case NpyDType::kF32:
      std::memcpy(out, p, static_cast<size_t>(n) * 4);
      return;
    case NpyDType::kU8:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      return;
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(at(first + i));
  }
}

}  // namespace ddp::datafiles
