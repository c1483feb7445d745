#include "common/checkpoint/checkpoint_format.h"

#include <cstdio>

#include "common/binary_io.h"
#include "common/named_sections.h"

namespace ddp::runtime {
namespace {
constexpr uint32_t kMaxSections = 1024;
}  // namespace

Result<std::string_view> CheckpointShard::section(const std::string& name) const {
  auto it = sections.find(name);
  if (it == sections.end()) {
    return notFound("checkpoint step " + std::to_string(step) + " rank " + std::to_string(rank) +
                    " has no section '" + name + "'");
  }
  return std::string_view(it->second);
}

std::string encodeShard(const CheckpointShard& shard) {
  BinaryWriter w;
  w.put<int64_t>(shard.step);
  w.put<int32_t>(shard.rank);
  w.put<int32_t>(shard.worldSize);
  w.put<uint32_t>(static_cast<uint32_t>(shard.sections.size()));
  putNamedSections(w, shard.sections);
  return writeFramed(kShardMagic, kShardVersion, w.data());
}

Result<CheckpointShard> decodeShard(std::string_view file, const std::string& what) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload,
                       readFramed(file, kShardMagic, kShardVersion, &version, what));
  BinaryReader r(payload, what);
  CheckpointShard s;
  int32_t rank = 0, world = 0;
  uint32_t n = 0;
  DDP_RETURN_IF_ERROR(r.get(&s.step));
  DDP_RETURN_IF_ERROR(r.get(&rank));
  DDP_RETURN_IF_ERROR(r.get(&world));
  DDP_RETURN_IF_ERROR(r.get(&n));
  if (world <= 0 || rank < 0 || rank >= world || n > kMaxSections || s.step < 0) {
    return dataLoss(what + ": implausible header (step " + std::to_string(s.step) + ", rank " +
                    std::to_string(rank) + " of " + std::to_string(world) + ")");
  }
  s.rank = rank;
  s.worldSize = world;
  DDP_RETURN_IF_ERROR(getNamedSections(r, n, &s.sections));
  if (!r.atEnd()) return dataLoss(what + ": trailing bytes after the sections");
  return s;
}

std::string encodeManifest(const CheckpointManifest& m) {
  BinaryWriter w;
  w.put<int64_t>(m.step);
  w.put<int32_t>(m.worldSize);
  w.putString(m.job);
  w.put<int64_t>(m.createdUnixMs);
  w.put<uint64_t>(m.specHash.value_or(0));  // version 2
  w.put<uint32_t>(static_cast<uint32_t>(m.shards.size()));
  for (const auto& e : m.shards) {
    w.put<uint64_t>(e.bytes);
    w.put<uint32_t>(e.crc);
  }
  return writeFramed(kManifestMagic, kManifestVersion, w.data());
}

Result<CheckpointManifest> decodeManifest(std::string_view file, const std::string& what) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload,
                       readFramed(file, kManifestMagic, kManifestVersion, &version, what));
  BinaryReader r(payload, what);
  CheckpointManifest m;
  int32_t world = 0;
  uint32_t n = 0;
  DDP_RETURN_IF_ERROR(r.get(&m.step));
  DDP_RETURN_IF_ERROR(r.get(&world));
  DDP_RETURN_IF_ERROR(r.getString(&m.job));
  DDP_RETURN_IF_ERROR(r.get(&m.createdUnixMs));
  if (version >= 2) {
    uint64_t hash = 0;
    DDP_RETURN_IF_ERROR(r.get(&hash));
    m.specHash = hash;
  }
  DDP_RETURN_IF_ERROR(r.get(&n));
  if (world <= 0 || static_cast<uint32_t>(world) != n || m.step < 0) {
    return dataLoss(what + ": implausible header (world " + std::to_string(world) + ", " +
                    std::to_string(n) + " shards)");
  }
  m.worldSize = world;
  m.shards.resize(n);
  for (auto& e : m.shards) {
    DDP_RETURN_IF_ERROR(r.get(&e.bytes));
    DDP_RETURN_IF_ERROR(r.get(&e.crc));
  }
  if (!r.atEnd()) return dataLoss(what + ": trailing bytes");
  return m;
}

JobMatch matchJob(const CheckpointManifest& m, const JobIdentity& job) {
  if (m.job != job.name) return JobMatch::kOtherJob;
  if (!m.specHash) return JobMatch::kLegacySameName;
  return *m.specHash == job.specHash ? JobMatch::kSame : JobMatch::kOtherSpec;
}

std::string specHashString(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::string stepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step-%012lld", static_cast<long long>(step));
  return buf;
}

std::string shardFileName(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "rank-%05d.ckpt", rank);
  return buf;
}

bool parseStepDirName(const std::string& name, int64_t* step) {
  constexpr std::string_view kPrefix = "step-";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  int64_t v = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *step = v;
  return true;
}

}  // namespace ddp::runtime
