#pragma once
// A user's dataset (spec.data.dataset idx, npy or csv; docs/DATA.md) loaded for training: both
// splits read (idx_dataset, npy_dataset, csv_dataset), the evaluation split held out of the
// training one when no val is given, the class count settled and every label checked against
// it, and the standardization (Note [Standardization]) computed or taken and applied.
//
// Note [Class count]
// spec.data.classes, when > 0, is the class count: a label >= it in either split is an error
// naming the file and the label's index in it. When 0 (the default) the count is the largest
// label of the training file + 1 (at least 2), and an evaluation label outside it is the same
// error. The model's output width follows (the mlp's and cnn's last layer), as its input width
// follows the sample shape.
// Thread model: plain functions.

#include <cstdint>
#include <vector>

#include "common/datafiles/user_data_files.h"
#include "common/status.h"
#include "worker/data/dataset.h"
#include "worker/data/standardize.h"

namespace ddp::data {

struct UserDataConfig {
  datafiles::UserDataFiles files;
  int classes = 0;            // 0: from the training labels (Note [Class count])
  double valFraction = 0.1;   // without files.val: the last fraction of the training samples
  int64_t trainLimit = 0;     // the first N training samples (0: all)
  int64_t valLimit = 0;       // the first N evaluation samples (0: all)
  bool standardizeAuto = false;
  std::vector<double> standardizeMean;  // given statistics (empty: none, or auto)
  std::vector<double> standardizeStd;
  bool operator==(const UserDataConfig&) const = default;
};

struct UserData {
  Dataset train;
  Dataset val;                      // empty when valFraction is 0 and no val is given
  Standardization standardization;  // empty: none applied
};

// Errors name the field and the file (the checks of inspectUserData first, then what reading
// finds). Same files and config -> the same bits on every rank.
Result<UserData> loadUserData(const UserDataConfig& config);

}  // namespace ddp::data
