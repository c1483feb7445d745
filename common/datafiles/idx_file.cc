// Note [IDX directories] (idx_file.h).
#include "common/datafiles/idx_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace ddp::datafiles {
namespace {

constexpr uint32_t kMaxDim = 1u << 30;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file in `dir` named <anything><stem>-<kind>-idx<d>-ubyte[.gz] for one of `stems`.
Result<std::string> findOne(const std::string& dir, const std::vector<std::string>& stems, const std::string& kind) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    for (const std::string& stem : stems) {
      const std::string want = stem + "-" + kind;
      if ((endsWith(name, want) || endsWith(name, want + ".gz")) && e.is_regular_file()) found.push_back(e.path().string());
    }
  }
  if (ec) return notFound(dir + ": cannot list the IDX directory: " + ec.message());
  std::string names;
  for (const std::string& stem : stems) names += (names.empty() ? "*" : " or *") + stem + "-" + kind + "[.gz]";
  if (found.empty()) return notFound(dir + ": no IDX file named " + names);
  if (found.size() > 1) {
    return invalidArgument(dir + ": two IDX files for one split: " + found[0] + " and " + found[1] +
                           " (keep one per directory)");
  }
  return found[0];
}

// The gzip trailer's ISIZE: the uncompressed size modulo 2^32 (single-member files).
Result<uint32_t> gzipSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 18) return invalidArgument(path + ": truncated gzip file");
  in.seekg(-4, std::ios::end);
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

}  // namespace

Result<IdxPair> findIdxPair(const std::string& dir, IdxSplit split) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return notFound(dir + ": no such directory");
  if (!std::filesystem::is_directory(dir, ec)) {
    return invalidArgument(dir + ": not a directory (an IDX source is the directory holding the files)");
  }
  const std::vector<std::string> stems =
      split == IdxSplit::kTrain ? std::vector<std::string>{"train"} : std::vector<std::string>{"t10k", "test"};
  IdxPair p;
  DDP_ASSIGN_OR_RETURN(p.images, findOne(dir, stems, "images-idx3-ubyte"));
  DDP_ASSIGN_OR_RETURN(p.labels, findOne(dir, stems, "labels-idx1-ubyte"));
  return p;
}

Result<IdxHeader> readIdxHeader(const std::string& path, int dims) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return notFound(path + ": " + std::strerror(errno));
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) return permissionDenied(path + ": cannot be read: " + std::strerror(errno));
  unsigned char head[4 + 4 * 3];
  const int want = 4 + 4 * dims;
  const int got = gzread(f.get(), head, static_cast<unsigned>(want));
  if (got != want) {
    return invalidArgument(path + ": truncated IDX header (" + std::to_string(std::max(got, 0)) + " of " +
                           std::to_string(want) + " bytes)");
  }
  if (head[0] != 0 || head[1] != 0) {
    return invalidArgument(path + ": not an IDX file (it does not start with two zero bytes)");
  }
  if (head[2] != 0x08) {
    char code[8];
    std::snprintf(code, sizeof(code), "0x%02x", head[2]);
    return invalidArgument(path + ": IDX type code " + code + " (only 0x08, unsigned bytes, is read)");
  }
  if (head[3] != dims) {
    return invalidArgument(path + ": " + std::to_string(head[3]) + " dimensions, expected " + std::to_string(dims) +
                           (dims == 3 ? " (images: count x rows x cols)" : " (labels: count)"));
  }
  IdxHeader h;
  h.gzip = gzdirect(f.get()) == 0;
  h.headerBytes = want;
  int64_t bytes = want;
  int64_t items = 1;
  for (int i = 0; i < dims; ++i) {
    const unsigned char* b = head + 4 + 4 * i;
    const uint32_t d = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    if (d > kMaxDim || (i > 0 && d == 0)) return invalidArgument(path + ": implausible dimension " + std::to_string(d));
    h.dims.push_back(d);
    items *= d;
  }
  bytes += items;
  if (!h.gzip && st.st_size != bytes) {
    return invalidArgument(path + ": the header announces " + std::to_string(items) + " bytes of data, " +
                           std::to_string(bytes) + " with the header, but the file has " + std::to_string(st.st_size) +
                           (st.st_size < bytes ? " (truncated)" : ""));
  }
  if (h.gzip) {
    DDP_ASSIGN_OR_RETURN(uint32_t isize, gzipSize(path));
    if (isize != static_cast<uint32_t>(bytes)) {
      return invalidArgument(path + ": the header announces " + std::to_string(bytes) +
                             " bytes uncompressed, the gzip trailer says " + std::to_string(isize) +
                             " (modulo 2^32): a truncated or mismatched file");
    }
  }
  return h;
}

Result<IdxShape> inspectIdxSplit(const std::string& dir, IdxSplit split) {
  IdxShape s;
  DDP_ASSIGN_OR_RETURN(s.files, findIdxPair(dir, split));
  DDP_ASSIGN_OR_RETURN(IdxHeader images, readIdxHeader(s.files.images, 3));
  DDP_ASSIGN_OR_RETURN(IdxHeader labels, readIdxHeader(s.files.labels, 1));
  if (images.dims[0] != labels.dims[0]) {
    return invalidArgument(s.files.images + " has " + std::to_string(images.dims[0]) + " images but " +
                           s.files.labels + " has " + std::to_string(labels.dims[0]) + " labels");
  }
  s.samples = images.dims[0];
  s.sampleShape = {1, images.dims[1], images.dims[2]};
  return s;
}

}  // namespace ddp::datafiles
