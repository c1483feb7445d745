#pragma once
// A split of an IDX directory (Note [IDX directories] in common/datafiles/idx_file.h): MNIST,
// KMNIST, EMNIST or Fashion-MNIST anywhere, gzip or plain. Images {1, rows, cols} with pixels
// scaled to [0, 1]; labels as classes. Errors name the file (the header checks of
// inspectIdxSplit, then what reading finds: truncated or corrupt data).
// Thread model: plain functions.

#include <string>

#include "common/datafiles/idx_file.h"
#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

// Dataset::name is the labels file; classes is left 0 (the caller decides: user_data.h).
Result<Dataset> loadIdxDataset(const std::string& dir, datafiles::IdxSplit split);

}  // namespace ddp::data
