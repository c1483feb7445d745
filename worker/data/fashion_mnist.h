#pragma once
// Fashion-MNIST from the IDX files of the Debian package `dataset-fashion-mnist`
// (gzip-compressed, under /usr/share/datasets/fashion-mnist/), read with zlib.
// Errors: missing files -> NotFound naming the package and how to install it; bad magic,
// wrong dimensions, truncated data or images/labels count mismatch -> DataLoss naming the file.
// Thread model: plain functions.

#include <string>

#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
// Pixel statistics of the training split after scaling to [0, 1] (used by normalize).
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

enum class Split { kTrain, kTest };

struct FashionMnistOptions {
  std::string dir = kFashionMnistDir;
  // Pixels are scaled to [0, 1]; with normalize, then to (x - kMean) / kStd.
  bool normalize = true;
  // Read only the first `limit` samples (0: all).
  int64_t limit = 0;
};

// Loads one split: images {1, 28, 28} as float, labels in [0, 10).
Result<Dataset> loadFashionMnist(Split split, const FashionMnistOptions& options = {});
// True when the four IDX files exist under dir.
bool fashionMnistAvailable(const std::string& dir = kFashionMnistDir);

// Low-level IDX readers (gzip or plain, as zlib detects). `limit` 0 reads all items.
// Images: magic 0x00000803, dims count x rows x cols, bytes. Labels: magic 0x00000801.
Result<Dataset> readIdxImages(const std::string& path, int64_t limit = 0);
Result<std::vector<int32_t>> readIdxLabels(const std::string& path, int64_t limit = 0);

}  // namespace ddp::data
