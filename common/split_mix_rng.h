#pragma once
// SplitMixRng: a tiny deterministic random generator (SplitMix64) whose output is identical on
// every platform and standard library (std::*_distribution is not), so that a seed gives
// bitwise-identical model init, data and shuffles on every rank and in every build.
// Thread model: a plain value; one generator per thread.

#include <cmath>
#include <cstdint>

namespace ddp {

class SplitMixRng {
 public:
  explicit SplitMixRng(uint64_t seed = 0) : state_(seed) {}
  // Mixes several values into one seed (e.g. seed, epoch, parameter index).
  static uint64_t mix(uint64_t a, uint64_t b) {
    SplitMixRng r(a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2)));
    return r.next();
  }
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n) (n > 0), without modulo bias worth caring about for n << 2^64.
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64); }
  // Standard normal by Box-Muller (one value per call; deterministic).
  float normal() {
    double u1 = (static_cast<double>(next() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  uint64_t state() const { return state_; }
  void setState(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace ddp
