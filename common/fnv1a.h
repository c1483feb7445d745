#pragma once
// FNV-1a, 64-bit: a small, stable (across builds and machines) non-cryptographic hash. The one
// definition of the project's FNV-1a (per-tensor PowerSGD seeds, bucket identities, op-header
// hashes of coalesced batches).
//
//   uint64_t h = fnv1a("layer.0.weight");             // bytes of a string
//   h = fnv1aWord(h, 42);                             // a 64-bit value, byte by byte
//
// Thread model: pure functions.

#include <cstdint>
#include <string_view>

namespace ddp {

inline constexpr uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ull;

// One FNV-1a round: h = (h xor v) * prime. The standard hash feeds one byte per round; feeding
// a wider value in one round is the variant bucket identities are defined with (they are saved
// in PowerSGD checkpoints, so their values must not change).
constexpr uint64_t fnv1aRound(uint64_t h, uint64_t v) { return (h ^ v) * kFnv1aPrime; }

// The bytes of `s`, continuing from `h`.
constexpr uint64_t fnv1a(std::string_view s, uint64_t h = kFnv1aOffsetBasis) {
  for (char c : s) h = fnv1aRound(h, static_cast<unsigned char>(c));
  return h;
}

// The 8 bytes of `v`, least significant first, continuing from `h`.
constexpr uint64_t fnv1aWord(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = fnv1aRound(h, (v >> (8 * i)) & 0xff);
  return h;
}

}  // namespace ddp
