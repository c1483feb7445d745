#include "worker/data/fashion_mnist.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstring>
#include <memory>

namespace ddp::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

bool fileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status missing(const std::string& path) {
  return notFound(std::string("Fashion-MNIST file ") + path + " not found: install the Debian package " +
                  kFashionMnistPackage + " (apt-get install " + kFashionMnistPackage +
                  ") or point data.dir at a directory holding the IDX files");
}

Result<GzFile> openGz(const std::string& path) {
  if (!fileExists(path)) return missing(path);
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return unavailable("cannot open " + path + ": " + std::strerror(errno));
  gzbuffer(f.get(), 1 << 17);
  return f;
}

Status readExact(gzFile_s* f, void* out, size_t n, const std::string& path, const char* what) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(f, static_cast<char*>(out) + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      return dataLoss(path + ": corrupt gzip stream while reading " + what + ": " + msg);
    }
    if (got == 0) {
      return dataLoss(path + ": truncated: " + what + " needs " + std::to_string(n) +
                      " bytes, file ended after " + std::to_string(done));
    }
    done += static_cast<size_t>(got);
  }
  return Status::ok();
}

Result<uint32_t> readBigEndian(gzFile_s* f, const std::string& path, const char* what) {
  unsigned char b[4];
  DDP_RETURN_IF_ERROR(readExact(f, b, 4, path, what));
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

Status checkMagic(uint32_t got, uint32_t want, const std::string& path, const char* kind) {
  if (got == want) return Status::ok();
  char buf[128];
  std::snprintf(buf, sizeof(buf), ": bad magic 0x%08x (an IDX %s file starts with 0x%08x)", got,
                kind, want);
  return dataLoss(path + buf);
}

}  // namespace

Result<Dataset> readIdxImages(const std::string& path, int64_t limit) {
  DDP_ASSIGN_OR_RETURN(GzFile f, openGz(path));
  DDP_ASSIGN_OR_RETURN(uint32_t magic, readBigEndian(f.get(), path, "header"));
  DDP_RETURN_IF_ERROR(checkMagic(magic, kImagesMagic, path, "images"));
  DDP_ASSIGN_OR_RETURN(uint32_t count, readBigEndian(f.get(), path, "header"));
  DDP_ASSIGN_OR_RETURN(uint32_t rows, readBigEndian(f.get(), path, "header"));
  DDP_ASSIGN_OR_RETURN(uint32_t cols, readBigEndian(f.get(), path, "header"));
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    return dataLoss(path + ": implausible image size " + std::to_string(rows) + "x" +
                    std::to_string(cols));
  }
  const int64_t n = limit > 0 ? std::min<int64_t>(limit, count) : count;
  const size_t pixels = static_cast<size_t>(rows) * cols;
  std::vector<unsigned char> raw(static_cast<size_t>(n) * pixels);
  DDP_RETURN_IF_ERROR(readExact(f.get(), raw.data(), raw.size(), path, "image data"));
  Dataset d;
  d.name = path;
  d.sampleShape = {1, rows, cols};
  d.images.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) d.images[i] = static_cast<float>(raw[i]) / 255.f;
  d.labels.assign(static_cast<size_t>(n), 0);
  return d;
}

Result<std::vector<int32_t>> readIdxLabels(const std::string& path, int64_t limit) {
  DDP_ASSIGN_OR_RETURN(GzFile f, openGz(path));
  DDP_ASSIGN_OR_RETURN(uint32_t magic, readBigEndian(f.get(), path, "header"));
  DDP_RETURN_IF_ERROR(checkMagic(magic, kLabelsMagic, path, "labels"));
  DDP_ASSIGN_OR_RETURN(uint32_t count, readBigEndian(f.get(), path, "header"));
  const int64_t n = limit > 0 ? std::min<int64_t>(limit, count) : count;
  std::vector<unsigned char> raw(static_cast<size_t>(n));
  DDP_RETURN_IF_ERROR(readExact(f.get(), raw.data(), raw.size(), path, "label data"));
  return std::vector<int32_t>(raw.begin(), raw.end());
}

bool fashionMnistAvailable(const std::string& dir) {
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    if (!fileExists(dir + "/" + f)) return false;
  }
  return true;
}

Result<Dataset> loadFashionMnist(Split split, const FashionMnistOptions& options) {
  const std::string prefix = options.dir + (split == Split::kTrain ? "/train" : "/t10k");
  const std::string imagesPath = prefix + "-images-idx3-ubyte.gz";
  const std::string labelsPath = prefix + "-labels-idx1-ubyte.gz";
  DDP_ASSIGN_OR_RETURN(Dataset d, readIdxImages(imagesPath, options.limit));
  DDP_ASSIGN_OR_RETURN(std::vector<int32_t> labels, readIdxLabels(labelsPath, options.limit));
  if (labels.size() != d.labels.size()) {
    return dataLoss("Fashion-MNIST: " + imagesPath + " has " + std::to_string(d.labels.size()) +
                    " images but " + labelsPath + " has " + std::to_string(labels.size()) +
                    " labels");
  }
  d.labels = std::move(labels);
  d.classes = 10;
  d.name = split == Split::kTrain ? "fashion-mnist/train" : "fashion-mnist/test";
  DDP_RETURN_IF_ERROR(d.validate().withContext(d.name));
  if (options.normalize) d.normalize(kFashionMnistMean, kFashionMnistStd);
  return d;
}

}  // namespace ddp::data
