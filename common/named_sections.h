#pragma once
// Named byte sections in a binary payload (binary_io.h framing): (name, bytes) pairs as
// putString writes them, in name order. Shared by the checkpoint shard format
// (checkpoint/checkpoint_format.cc) and a survivor's peer state (worker/training/peer_state.cc);
// each writes and reads the count itself, in its own format's width.
// Thread model: pure functions.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/binary_io.h"
#include "common/status.h"

namespace ddp {

inline void putNamedSections(BinaryWriter& w, const std::map<std::string, std::string>& sections) {
  for (const auto& [name, bytes] : sections) {
    w.putString(name);
    w.putString(bytes);
  }
}

// Reads `count` sections into `out`; the reader's error (naming what it reads) on a short payload.
inline Status getNamedSections(BinaryReader& r, uint64_t count, std::map<std::string, std::string>* out) {
  for (uint64_t i = 0; i < count; ++i) {
    std::string name, bytes;
    DDP_RETURN_IF_ERROR(r.getString(&name));
    DDP_RETURN_IF_ERROR(r.getString(&bytes));
    out->emplace(std::move(name), std::move(bytes));
  }
  return Status::ok();
}

}  // namespace ddp
