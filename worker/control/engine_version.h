#pragma once
// The engine library's semantic version (docs/EXTENDING.md): the installed DdpEngine package's
// version (cmake/Install.cmake reads it from here, so the package and this header agree). The
// major number moves when a public header (the package's include/ddp/) changes incompatibly,
// the minor one when it grows.
// Thread model: constants.

#define DDP_ENGINE_VERSION_MAJOR 0
#define DDP_ENGINE_VERSION_MINOR 1
#define DDP_ENGINE_VERSION_PATCH 0

namespace ddp::worker {

inline constexpr int kEngineVersionMajor = DDP_ENGINE_VERSION_MAJOR;
inline constexpr int kEngineVersionMinor = DDP_ENGINE_VERSION_MINOR;
inline constexpr int kEngineVersionPatch = DDP_ENGINE_VERSION_PATCH;

}  // namespace ddp::worker
