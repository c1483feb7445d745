#pragma once
// On-disk format of one checkpoint: per-rank shard files and the manifest.
//
// Note [Checkpoint layout]
//   <dir>/step-<%012d step>/rank-<%05d rank>.ckpt   one per rank, written by that rank
//   <dir>/step-<%012d step>/MANIFEST                written last, by rank 0
// Both are frames (common/binary_io.h writeFramed: magic, version, length, CRC32). A shard
// holds the step, rank, world size and named sections (opaque bytes owned by their producers:
// "model", "optimizer", "comm_hook", "sampler", "trainer", ...). The manifest holds the step,
// world size, the job's identity (Note [Checkpoint job identity]) and, per rank, the shard's
// byte size and CRC32 of the whole file, so a shard replaced or damaged after the manifest was
// written is detected too. A checkpoint is complete iff its MANIFEST parses and every shard it
// lists matches its size and CRC.
//
// Note [Checkpoint job identity]
// A checkpoint belongs to the job that wrote it: the manifest records the job's name and a hash
// of the spec fields that change the training trajectory (JobIdentity; the hash is
// trajectoryHash() in worker/training/trainer_config.h: it leaves out the world size, which a
// resumed job may change, and the checkpoint, logging and timeout settings). matchJob() sorts a
// manifest into: this job's (same name and hash), this job's legacy checkpoint (a version-1
// manifest, written before the hash existed, whose name matches: accepted, since version-1
// runs already refused another seed or batch size when resuming), another job's (another
// name), or this job's name with another spec (the spec changed: its checkpoints are not a
// point on this run's trajectory). A directory holding another job's checkpoint, or one of
// another spec, is refused by the coordinator (CheckpointStore::checkOwnership).
// Manifest versions: 1 (step, world, name, time, shards); 2 adds the spec hash after the time.
// This build writes 2 and reads both.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::runtime {

inline constexpr uint32_t kShardMagic = 0x44445043;     // "CPDD"
inline constexpr uint32_t kManifestMagic = 0x4444504d;  // "MPDD"
inline constexpr uint32_t kShardVersion = 1;
inline constexpr uint32_t kManifestVersion = 2;          // 2: + spec hash (reads 1 too)
inline constexpr const char* kManifestName = "MANIFEST";

// Which job a checkpoint belongs to (Note [Checkpoint job identity]).
struct JobIdentity {
  std::string name;       // the job's name (spec.name)
  uint64_t specHash = 0;  // trajectoryHash() of its spec
};

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
  std::string job;                    // the job's name
  int64_t createdUnixMs = 0;          // rank 0's wall clock at commit
  std::vector<ManifestEntry> shards;  // indexed by rank
  std::optional<uint64_t> specHash;   // the job's spec hash; empty in a version-1 manifest
};

// How a manifest's job relates to `job` (Note [Checkpoint job identity]).
enum class JobMatch : uint8_t {
  kSame,            // same name and spec hash
  kLegacySameName,  // version-1 manifest (no hash) with the same name: accepted as this job's
  kOtherJob,        // another job's name
  kOtherSpec,       // same name, another spec hash
};
JobMatch matchJob(const CheckpointManifest& manifest, const JobIdentity& job);
inline bool isOwnCheckpoint(JobMatch m) { return m == JobMatch::kSame || m == JobMatch::kLegacySameName; }
// "0x0123456789abcdef"
std::string specHashString(uint64_t hash);

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
