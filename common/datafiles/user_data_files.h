#pragma once
// The files of a user's dataset (spec.data.dataset idx, npy or csv: docs/DATA.md) and the cheap
// checks both the controller (at submission, when it sees the workers' filesystem: Note [Data
// checks at submission]) and the worker (before the first step) run on them, with the same
// messages: each file exists and is readable, its header parses, the sizes agree with it, a
// split's features and targets count the same samples, the CSV header has the target column,
// and both splits have the same sample shape. No file is read whole.
// Thread model: plain values and free functions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::datafiles {

enum class UserDataFormat : uint8_t { kIdx, kNpy, kCsv };

// One split (spec.data.train / val): idx: `path` is the directory of the IDX files; csv: `path`
// is the file; npy: `features` and `targets` are the two arrays.
struct SplitFiles {
  std::string path;
  std::string features;
  std::string targets;
  bool empty() const { return path.empty() && features.empty() && targets.empty(); }
  bool operator==(const SplitFiles&) const = default;
};

struct UserDataFiles {
  UserDataFormat format = UserDataFormat::kNpy;
  SplitFiles train;
  SplitFiles val;      // empty: spec.data.valFraction of train
  std::string target;  // csv: the label column
  bool regression = false;  // csv: the target column holds float values (spec.loss mse)
  bool operator==(const UserDataFiles&) const = default;
};

// What the headers say about a split.
struct SplitInfo {
  int64_t samples = -1;              // -1: unknown without reading every line (csv)
  std::vector<int64_t> sampleShape;  // idx {1, rows, cols}; npy the trailing shape; csv {columns - 1}
  bool floatTargets = false;         // npy '<f4' / '<f8' targets; csv under regression
  int64_t features() const;          // prod(sampleShape)
};

// A sample shape as errors write it: "1x28x28" ("scalar" for {}).
std::string shapeText(const std::vector<int64_t>& shape);

// One split's checks; errors start with the field ("spec.data.train.features: FILE: ...").
Result<SplitInfo> inspectSplit(const UserDataFiles& files, bool train);
// Both splits (val when it is given), and that their sample shapes and target kinds agree;
// returns the training split's.
Result<SplitInfo> inspectUserData(const UserDataFiles& files);

}  // namespace ddp::datafiles
