#include "common/checkpoint/checkpoint_store.h"

#include <algorithm>

#include "common/binary_io.h"
#include "common/checkpoint/atomic_file.h"

namespace ddp::runtime {

CheckpointStore::CheckpointStore(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string CheckpointStore::stepDir(int64_t step) const { return root_ + "/" + stepDirName(step); }
std::string CheckpointStore::shardPath(int64_t step, int rank) const {
  return stepDir(step) + "/" + shardFileName(rank);
}
std::string CheckpointStore::manifestPath(int64_t step) const {
  return stepDir(step) + "/" + kManifestName;
}

Status CheckpointStore::writeShard(const CheckpointShard& shard) {
  DDP_RETURN_IF_ERROR(makeDirs(stepDir(shard.step)));
  return writeFileAtomic(shardPath(shard.step, shard.rank), encodeShard(shard))
      .withContext("checkpoint step " + std::to_string(shard.step) + " rank " +
                   std::to_string(shard.rank));
}

Result<CheckpointManifest> CheckpointStore::commit(int64_t step, int worldSize,
                                                   const std::string& job, int64_t createdUnixMs) {
  if (worldSize <= 0) return invalidArgument("commit: world size must be positive");
  CheckpointManifest m;
  m.step = step;
  m.worldSize = worldSize;
  m.job = job;
  m.createdUnixMs = createdUnixMs;
  m.shards.resize(static_cast<size_t>(worldSize));
  for (int r = 0; r < worldSize; ++r) {
    const std::string path = shardPath(step, r);
    auto file = readFile(path);
    if (!file.isOk()) return file.status().withContext("commit step " + std::to_string(step));
    auto shard = decodeShard(*file, path);
    if (!shard.isOk()) return shard.status().withContext("commit step " + std::to_string(step));
    if (shard->step != step || shard->rank != r || shard->worldSize != worldSize) {
      return dataLoss("commit step " + std::to_string(step) + ": " + path + " holds step " +
                      std::to_string(shard->step) + " rank " + std::to_string(shard->rank) +
                      " of " + std::to_string(shard->worldSize));
    }
    m.shards[static_cast<size_t>(r)] = {file->size(), crc32(file->data(), file->size())};
  }
  DDP_RETURN_IF_ERROR(writeFileAtomic(manifestPath(step), encodeManifest(m)));
  return m;
}

Result<CheckpointManifest> CheckpointStore::verify(int64_t step) const {
  const std::string mpath = manifestPath(step);
  auto file = readFile(mpath);
  if (!file.isOk()) {
    if (file.status().code() == StatusCode::kNotFound) {
      return notFound("no MANIFEST (partial checkpoint: not every rank finished writing)");
    }
    return file.status();
  }
  DDP_ASSIGN_OR_RETURN(CheckpointManifest m, decodeManifest(*file, mpath));
  if (m.step != step) {
    return dataLoss(mpath + " names step " + std::to_string(m.step));
  }
  for (int r = 0; r < m.worldSize; ++r) {
    const std::string path = shardPath(step, r);
    auto shard = readFile(path);
    if (!shard.isOk()) return shard.status();
    const ManifestEntry& e = m.shards[static_cast<size_t>(r)];
    if (shard->size() != e.bytes) {
      return dataLoss(path + ": " + std::to_string(shard->size()) + " bytes, manifest says " +
                      std::to_string(e.bytes));
    }
    if (crc32(shard->data(), shard->size()) != e.crc) {
      return dataLoss(path + ": checksum mismatch against the manifest");
    }
  }
  return m;
}

Result<std::vector<int64_t>> CheckpointStore::listSteps() const {
  auto names = listDir(root_);
  if (!names.isOk()) {
    if (names.status().code() == StatusCode::kNotFound) return std::vector<int64_t>{};
    return names.status();
  }
  std::vector<int64_t> steps;
  for (const auto& n : *names) {
    int64_t s = 0;
    if (parseStepDirName(n, &s)) steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

Result<LatestCheckpoint> CheckpointStore::findLatestComplete(int worldSize) const {
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  LatestCheckpoint out;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto m = verify(*it);
    if (!m.isOk()) {
      out.skipped.push_back("step " + std::to_string(*it) + ": " + m.status().message());
      continue;
    }
    if (worldSize > 0 && m->worldSize != worldSize) {
      out.skipped.push_back("step " + std::to_string(*it) + ": written by " +
                            std::to_string(m->worldSize) + " workers, this run has " +
                            std::to_string(worldSize));
      continue;
    }
    out.manifest = std::move(*m);
    break;
  }
  return out;
}

Result<CheckpointShard> CheckpointStore::readShard(const CheckpointManifest& m, int rank) const {
  if (rank < 0 || rank >= m.worldSize) {
    return invalidArgument("rank " + std::to_string(rank) + " not in checkpoint of " +
                           std::to_string(m.worldSize) + " ranks");
  }
  const std::string path = shardPath(m.step, rank);
  DDP_ASSIGN_OR_RETURN(std::string file, readFile(path));
  const ManifestEntry& e = m.shards[static_cast<size_t>(rank)];
  if (file.size() != e.bytes || crc32(file.data(), file.size()) != e.crc) {
    return dataLoss(path + ": does not match the manifest (size or checksum)");
  }
  DDP_ASSIGN_OR_RETURN(CheckpointShard s, decodeShard(file, path));
  if (s.step != m.step || s.rank != rank || s.worldSize != m.worldSize) {
    return dataLoss(path + ": header disagrees with the manifest");
  }
  return s;
}

Status CheckpointStore::applyRetention(int keep) const {
  if (keep <= 0) return Status::ok();
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  int kept = 0;
  bool sawComplete = false;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const bool complete = verify(*it).isOk();
    if (complete && kept < keep) {
      ++kept;
      sawComplete = true;
      continue;
    }
    // Older than the newest complete one: either surplus complete, or a dead partial.
    if (sawComplete) DDP_RETURN_IF_ERROR(removeAll(stepDir(*it)));
  }
  return syncDir(root_);
}

}  // namespace ddp::runtime
