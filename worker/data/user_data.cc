// Note [Class count] (user_data.h).
#include "worker/data/user_data.h"

#include <algorithm>
#include <cmath>

#include "worker/data/csv_dataset.h"
#include "worker/data/idx_dataset.h"
#include "worker/data/npy_dataset.h"

namespace ddp::data {
namespace {

using datafiles::UserDataFormat;

Result<Dataset> readSplit(const UserDataConfig& c, const datafiles::SplitFiles& f, bool train) {
  switch (c.files.format) {
    case UserDataFormat::kIdx:
      return loadIdxDataset(f.path, train ? datafiles::IdxSplit::kTrain : datafiles::IdxSplit::kEval);
    case UserDataFormat::kNpy:
      return loadNpyDataset(f.features, f.targets);
    case UserDataFormat::kCsv:
      return loadCsvDataset(f.path, c.files.target, c.files.regression);
  }
  return invalidArgument("unknown data format");
}

Result<Dataset> loadSplit(const UserDataConfig& c, bool train) {
  auto d = readSplit(c, train ? c.files.train : c.files.val, train);
  if (!d.isOk()) return d.status().withContext(train ? "spec.data.train" : "spec.data.val");
  return d;
}

// Every label of `d` (read from the file d.name) below `classes`.
Status checkLabels(const Dataset& d, int classes, bool inferred) {
  for (size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] >= classes) {
      return invalidArgument(d.name + ": label " + std::to_string(d.labels[i]) + " at index " + std::to_string(i) +
                             (inferred ? " is outside the training labels' classes [0, " + std::to_string(classes) +
                                             ") (set spec.data.classes)"
                                       : " is >= spec.data.classes (" + std::to_string(classes) + ")"));
    }
  }
  return Status::ok();
}

Result<int> settleClasses(const UserDataConfig& c, const Dataset& train, const Dataset* val) {
  int classes = c.classes;
  const bool inferred = classes == 0;
  if (inferred) {
    int32_t top = 0;
    for (int32_t l : train.labels) top = std::max(top, l);
    classes = std::max(2, top + 1);
  }
  DDP_RETURN_IF_ERROR(checkLabels(train, classes, inferred));
  if (val != nullptr) DDP_RETURN_IF_ERROR(checkLabels(*val, classes, inferred));
  return classes;
}

// The last valFraction of `train` (the rule of the token datasets: floor(n x fraction)).
Dataset holdOut(Dataset* train, double fraction) {
  const int64_t n = train->size();
  const int64_t held = fraction > 0 ? static_cast<int64_t>(std::floor(static_cast<double>(n) * fraction)) : 0;
  Dataset val = train->slice(n - held, held);
  *train = train->head(n - held);
  return val;
}

Status standardize(const UserDataConfig& c, UserData* u) {
  Standardization& s = u->standardization;
  if (c.standardizeAuto) {
    s = computeStandardization(u->train, c.files.format != UserDataFormat::kIdx);
  } else if (!c.standardizeMean.empty()) {
    s.mean.assign(c.standardizeMean.begin(), c.standardizeMean.end());
    s.std.assign(c.standardizeStd.begin(), c.standardizeStd.end());
    DDP_RETURN_IF_ERROR(checkStandardization(s, u->train.sampleNumel()));
  }
  applyStandardization(s, &u->train);
  applyStandardization(s, &u->val);
  return Status::ok();
}

}  // namespace

Result<UserData> loadUserData(const UserDataConfig& c) {
  DDP_RETURN_IF_ERROR(datafiles::inspectUserData(c.files).status());
  UserData u;
  DDP_ASSIGN_OR_RETURN(u.train, loadSplit(c, true));
  const bool given = !c.files.val.empty();
  if (given) {
    DDP_ASSIGN_OR_RETURN(u.val, loadSplit(c, false));
  }
  if (!u.train.floatTargets) {
    DDP_ASSIGN_OR_RETURN(int classes, settleClasses(c, u.train, given ? &u.val : nullptr));
    u.train.classes = classes;
  }
  if (!given) u.val = holdOut(&u.train, c.valFraction);
  u.val.classes = u.train.classes;
  if (u.train.size() < 1) {
    return invalidArgument("spec.data.valFraction: holds out every training sample of " + u.train.name);
  }
  if (c.trainLimit > 0) u.train = u.train.head(c.trainLimit);
  if (c.valLimit > 0) u.val = u.val.head(c.valLimit);
  DDP_RETURN_IF_ERROR(standardize(c, &u));
  return u;
}

}  // namespace ddp::data
