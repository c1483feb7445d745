#pragma once
// On-disk format of one checkpoint: per-rank shard files and the manifest.
//
// Note [Checkpoint layout]
//   <dir>/step-<%012d step>/rank-<%05d rank>.ckpt   one per rank, written by that rank
//   <dir>/step-<%012d step>/MANIFEST                written last, by rank 0
// Both are frames (common/binary_io.h writeFramed: magic, version, length, CRC32). A shard
// holds the step, rank, world size and named sections (opaque bytes owned by their producers:
// "model", "optimizer", "comm_hook", "sampler", "trainer", ...). The manifest holds the step,
// world size, job name and, per rank, the shard's byte size and CRC32 of the whole file, so a
// shard replaced or damaged after the manifest was written is detected too. A checkpoint is
// complete iff its MANIFEST parses and every shard it lists matches its size and CRC.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::runtime {

inline constexpr uint32_t kShardMagic = 0x44445043;     // "CPDD"
inline constexpr uint32_t kManifestMagic = 0x4444504d;  // "MPDD"
inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr const char* kManifestName = "MANIFEST";

// What one rank saves.
struct CheckpointShard {
  int64_t step = 0;
  int rank = 0;
  int worldSize = 1;
  std::map<std::string, std::string> sections;  // name -> opaque bytes

  // The named section, or NotFound naming it.
  Result<std::string_view> section(const std::string& name) const;
};

struct ManifestEntry {
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

struct CheckpointManifest {
  int64_t step = 0;
  int worldSize = 1;
  std::string job;
  int64_t createdUnixMs = 0;
  std::vector<ManifestEntry> shards;  // indexed by rank
};

std::string encodeShard(const CheckpointShard& shard);
// `what` names the file in errors.
Result<CheckpointShard> decodeShard(std::string_view file, const std::string& what);
std::string encodeManifest(const CheckpointManifest& manifest);
Result<CheckpointManifest> decodeManifest(std::string_view file, const std::string& what);

std::string stepDirName(int64_t step);   // "step-000000000100"
std::string shardFileName(int rank);     // "rank-00001.ckpt"
// Parses "step-<digits>"; false on anything else (temp files, stray entries).
bool parseStepDirName(const std::string& name, int64_t* step);

}  // namespace ddp::runtime
