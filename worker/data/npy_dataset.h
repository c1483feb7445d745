#pragma once
// A split from two NPY files (Note [NPY files] in common/datafiles/npy_file.h): features of any
// shape (N, ...) as '<f4', '<f8' or '|u1', left in the mapped file and converted to float as
// samples are copied (Note [Mapped features]); targets (N,) or
// (N, 1): '<i4', '<i8' (or '|u1') class labels, or '<f4', '<f8' float values (regression).
// Errors name the file: its header (readNpyHeader), a row count that differs between the two,
// a negative or too large class label (with its index), a non-finite feature or target (with
// its index).
// Thread model: plain functions.

#include <string>

#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

// Dataset::name is the targets file (label range errors name it); classes is left 0 (the
// caller decides: user_data.h).
Result<Dataset> loadNpyDataset(const std::string& featuresPath, const std::string& targetsPath);

}  // namespace ddp::data
