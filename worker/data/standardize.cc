// Note [Standardization] (standardize.h).
#include "worker/data/standardize.h"

#include <cmath>
#include <cstring>

namespace ddp::data {
namespace {

constexpr uint32_t kMagic = 0x53544431;  // "STD1"

void put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }

float at(const std::vector<float>& v, int64_t j) { return v.size() == 1 ? v[0] : v[static_cast<size_t>(j)]; }

}  // namespace

std::string Standardization::encode() const {
  std::string out;
  const uint32_t magic = kMagic;
  const uint64_t n = mean.size();
  put(&out, &magic, 4);
  put(&out, &n, 8);
  put(&out, mean.data(), n * 4);
  put(&out, std.data(), n * 4);
  return out;
}

Result<Standardization> Standardization::decode(std::string_view bytes) {
  uint32_t magic = 0;
  uint64_t n = 0;
  if (bytes.size() < 12) return dataLoss("standardize section: " + std::to_string(bytes.size()) + " bytes, too short");
  std::memcpy(&magic, bytes.data(), 4);
  std::memcpy(&n, bytes.data() + 4, 8);
  if (magic != kMagic || bytes.size() != 12 + 8 * n) {
    return dataLoss("standardize section: not a standardization (magic or length wrong)");
  }
  Standardization s;
  s.mean.resize(n);
  s.std.resize(n);
  std::memcpy(s.mean.data(), bytes.data() + 12, n * 4);
  std::memcpy(s.std.data(), bytes.data() + 12 + 4 * n, n * 4);
  return s;
}

Standardization computeStandardization(const Dataset& train, bool perFeature) {
  const int64_t f = train.sampleNumel();
  const int64_t stats = perFeature ? f : 1;
  std::vector<double> sum(static_cast<size_t>(stats), 0.0), sq(static_cast<size_t>(stats), 0.0);
  std::vector<float> row(static_cast<size_t>(f));
  for (int64_t i = 0; i < train.size(); ++i) {
    train.copySamples(i, 1, row.data());
    const float* x = row.data();
    for (int64_t j = 0; j < f; ++j) {
      const size_t k = perFeature ? static_cast<size_t>(j) : 0;
      sum[k] += x[j];
      sq[k] += static_cast<double>(x[j]) * x[j];
    }
  }
  const double n = std::max<double>(1.0, static_cast<double>(train.size()) * (perFeature ? 1 : f));
  Standardization s;
  for (int64_t k = 0; k < stats; ++k) {
    const double mean = sum[k] / n;
    const double sd = std::sqrt(std::max(0.0, sq[k] / n - mean * mean));
    s.mean.push_back(static_cast<float>(mean));
    s.std.push_back(sd > 0 && static_cast<float>(sd) > 0 ? static_cast<float>(sd) : 1.f);
  }
  return s;
}

Status checkStandardization(const Standardization& s, int64_t features) {
  for (const auto& [name, v] : {std::pair{"mean", &s.mean}, std::pair{"std", &s.std}}) {
    const int64_t n = static_cast<int64_t>(v->size());
    if (n != 1 && n != features) {
      return invalidArgument(std::string("spec.data.standardize.") + name + ": " + std::to_string(n) +
                             " values, but the data has " + std::to_string(features) +
                             " features (give one value for every feature, or one per feature)");
    }
  }
  if (s.mean.size() != s.std.size()) {
    return invalidArgument("spec.data.standardize.std: " + std::to_string(s.std.size()) + " values, mean has " +
                           std::to_string(s.mean.size()));
  }
  for (size_t j = 0; j < s.std.size(); ++j) {
    if (!(s.std[j] > 0)) return invalidArgument("spec.data.standardize.std[" + std::to_string(j) + "]: must be > 0");
  }
  return Status::ok();
}

namespace {

// Note [Mapped features]: a mapped dataset standardizes as samples are copied.
void setMappedTransform(const Standardization& s, Dataset* d) {
  d->mapped->shift = s.mean;
  d->mapped->scale.clear();
  for (float sd : s.std) d->mapped->scale.push_back(1.f / sd);
}

}  // namespace

void applyStandardization(const Standardization& s, Dataset* d) {
  if (s.empty()) return;
  if (d->mapped) return setMappedTransform(s, d);
  const int64_t f = d->sampleNumel();
  std::vector<float> inv(static_cast<size_t>(f));
  for (int64_t j = 0; j < f; ++j) inv[j] = 1.f / at(s.std, j);
  for (int64_t i = 0; i < d->size(); ++i) {
    float* x = d->images.data() + i * f;
    for (int64_t j = 0; j < f; ++j) x[j] = (x[j] - at(s.mean, j)) * inv[j];
  }
}

void restandardize(const Standardization& from, const Standardization& to, Dataset* d) {
  if (d->mapped) return setMappedTransform(to, d);  // the raw values are in the file: exact
  const int64_t f = d->sampleNumel();
  for (int64_t i = 0; i < d->size(); ++i) {
    float* x = d->images.data() + i * f;
    for (int64_t j = 0; j < f; ++j) {
      const double raw = from.empty() ? x[j] : static_cast<double>(x[j]) * at(from.std, j) + at(from.mean, j);
      x[j] = to.empty() ? static_cast<float>(raw) : static_cast<float>((raw - at(to.mean, j)) / at(to.std, j));
    }
  }
}

}  // namespace ddp::data
