#pragma once
// A data set of two views per sample, made from a seed (the same on every rank): sample shape
// {2, D}. View 0 tells which pair of classes a sample belongs to (class / 2), view 1 which one of
// the pair (class % 2): neither view alone can do better than half the classes' guesses, both
// together nearly always right. Each view is its group's centre (N(0, separation^2) per
// feature) plus N(0, noise^2) per feature.
// Thread model: a pure function.

#include <cstdint>

#include <ddp/common/status.h>
#include <ddp/worker/data/dataset.h>

namespace two_tower {

struct TwoViewOptions {
  int64_t samples = 4096;
  int64_t viewFeatures = 16;
  int classes = 10;  // even
  double separation = 2.0;
  double noise = 1.0;
};

// The split drawn from `seed` (centres from `centreSeed`, shared by both splits).
ddp::Result<ddp::data::Dataset> makeTwoViewData(const TwoViewOptions& o, uint64_t centreSeed, uint64_t seed);

}  // namespace two_tower
