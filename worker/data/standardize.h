#pragma once
// Note [Standardization]
// spec.data.standardize (idx, npy and csv data) maps every feature x to (x - mean) / std, with
// the same mean and std on the training and the evaluation split:
//  - given: `mean` and `std` lists of one value (every feature) or one per feature (the flattened
//    sample: an IDX image's pixels, an NPY sample's values in C order, a CSV row's feature
//    columns in the file's order); every std > 0.
//  - auto: computed on the training split (after valFraction and spec.data.limit), in double
//    precision in sample order, so every rank computes the same bits: per feature for NPY and
//    CSV (columns measure different things); one mean and std over every pixel for IDX images
//    (one channel; a per-pixel std would be 0 at the borders MNIST leaves blank). A constant
//    feature (std 0) keeps std 1: it is only centred.
// The values are saved in every checkpoint (section "standardize") and a resumed or healed run
// uses the saved ones (re-standardizing its data when they differ from what it computed: the
// training files changed), so the parameters always see inputs scaled as they were trained on.
// Thread model: plain values and functions.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

struct Standardization {
  std::vector<float> mean;  // one value, or one per feature; empty: none
  std::vector<float> std;
  bool empty() const { return mean.empty(); }
  bool operator==(const Standardization&) const = default;
  // The checkpoint section's bytes, and back (DataLoss when they do not decode).
  std::string encode() const;
  static Result<Standardization> decode(std::string_view bytes);
};

// The auto statistics of `train` (perFeature, or one over every value).
Standardization computeStandardization(const Dataset& train, bool perFeature);
// InvalidArgument naming spec.data.standardize.mean / std when a length is neither 1 nor
// `features`, the two lengths differ, or a std is not > 0.
Status checkStandardization(const Standardization& s, int64_t features);
// x <- (x - mean) / std for every feature of every sample (s checked).
void applyStandardization(const Standardization& s, Dataset* d);
// Undoes `from` and applies `to` (a resumed run adopting its checkpoint's statistics).
void restandardize(const Standardization& from, const Standardization& to, Dataset* d);

}  // namespace ddp::data
