#include "two_view_data.h"

#include <random>
#include <string>
#include <vector>

namespace two_tower {

ddp::Result<ddp::data::Dataset> makeTwoViewData(const TwoViewOptions& o, uint64_t centreSeed, uint64_t seed) {
  if (o.classes < 2 || o.classes % 2 != 0) {
    return ddp::invalidArgument("two-view data: classes must be even and >= 2, got " + std::to_string(o.classes));
  }
  if (o.samples < 1 || o.viewFeatures < 1) return ddp::invalidArgument("two-view data: samples and features must be >= 1");
  const int64_t d = o.viewFeatures;
  std::mt19937_64 centreGen(centreSeed);
  std::normal_distribution<double> centre(0.0, o.separation);
  std::vector<double> pairCentres(static_cast<size_t>(o.classes / 2 * d)), memberCentres(static_cast<size_t>(2 * d));
  for (double& c : pairCentres) c = centre(centreGen);
  for (double& c : memberCentres) c = centre(centreGen);

  ddp::data::Dataset out;
  out.name = "two-view";
  out.sampleShape = {2, d};
  out.classes = o.classes;
  out.images.resize(static_cast<size_t>(o.samples * 2 * d));
  out.labels.resize(static_cast<size_t>(o.samples));
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> label(0, o.classes - 1);
  std::normal_distribution<double> noise(0.0, o.noise);
  for (int64_t i = 0; i < o.samples; ++i) {
    const int c = label(gen);
    out.labels[static_cast<size_t>(i)] = c;
    float* x = out.images.data() + i * 2 * d;
    for (int64_t j = 0; j < d; ++j) x[j] = static_cast<float>(pairCentres[static_cast<size_t>((c / 2) * d + j)] + noise(gen));
    for (int64_t j = 0; j < d; ++j) x[d + j] = static_cast<float>(memberCentres[static_cast<size_t>((c % 2) * d + j)] + noise(gen));
  }
  return out;
}

}  // namespace two_tower
