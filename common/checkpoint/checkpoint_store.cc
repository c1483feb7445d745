#include "common/checkpoint/checkpoint_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/binary_io.h"
#include "common/checkpoint/atomic_file.h"

namespace ddp::runtime {
namespace {

constexpr const char* kProbePrefix = ".write-probe-";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Why `m` is not `job`'s (matchJob is kOtherJob or kOtherSpec), for the refusal.
std::string foreignReason(const std::string& dir, const std::string& manifestPath, const CheckpointManifest& m,
                          const JobIdentity& job) {
  const std::string where = "checkpoint directory " + dir + ": checkpoint step " + std::to_string(m.step) + " (" +
                            manifestPath + ")";
  if (matchJob(m, job) == JobMatch::kOtherSpec) {
    return where + " was written by job " + quoted(m.job) + " with a different spec (spec hash " +
           specHashString(*m.specHash) + ", this run's is " + specHashString(job.specHash) +
           "): the model, data, seed, batch size, gradient accumulation, optimizer or its schedule, clipping, "
           "comm hook, ZeRO mode or epochs/steps changed, so it is not a point of this run; use a fresh "
           "checkpoint directory";
  }
  return where + " belongs to job " + quoted(m.job) + (m.specHash ? "" : " (a version-1 checkpoint)") +
         ", not to this job " + quoted(job.name) +
         ": a checkpoint directory belongs to one job; use a fresh checkpoint directory for " + quoted(job.name) +
         " (or remove " + quoted(m.job) + "'s checkpoints)";
}

// A manifest of `job`'s checkpoint at `step`, without its shard entries.
CheckpointManifest manifestHeader(int64_t step, int worldSize, const JobIdentity& job, int64_t createdUnixMs) {
  CheckpointManifest m;
  m.step = step;
  m.worldSize = worldSize;
  m.job = job.name;
  m.specHash = job.specHash;
  m.createdUnixMs = createdUnixMs;
  return m;
}

}  // namespace

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

Status CheckpointStore::checkWritable(const std::string& tag) const {
  if (Status st = makeDirs(root_); !st.isOk()) {
    return permissionDenied("checkpoint directory " + root_ + " cannot be created: " + st.message());
  }
  const std::string probe = root_ + "/" + kProbePrefix + tag;
  Status st = writeFileAtomic(probe, "checkpoint directory write probe\n");
  if (st.isOk() && ::unlink(probe.c_str()) != 0) st = unavailable("remove " + probe + ": " + std::strerror(errno));
  if (!st.isOk()) return permissionDenied("checkpoint directory " + root_ + " is not writable: " + st.message());
  return Status::ok();
}

Status CheckpointStore::checkOwnership(const JobIdentity& job) const {
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto m = readManifest(*it);
    if (!m.isOk()) continue;  // partial or damaged: says nothing about whose it is
    if (isOwnCheckpoint(matchJob(*m, job))) continue;
    return permissionDenied(foreignReason(root_, manifestPath(*it), *m, job));
  }
  return Status::ok();
}

Result<ManifestEntry> CheckpointStore::writeShard(const CheckpointShard& shard) {
  const std::string context = "checkpoint step " + std::to_string(shard.step) + " rank " + std::to_string(shard.rank);
  DDP_RETURN_IF_ERROR(makeDirs(stepDir(shard.step)).withContext(context));
  const std::string bytes = encodeShard(shard);
  DDP_RETURN_IF_ERROR(writeFileAtomic(shardPath(shard.step, shard.rank), bytes).withContext(context));
  return ManifestEntry{bytes.size(), crc32(bytes.data(), bytes.size())};
}

Result<CheckpointManifest> CheckpointStore::commitReported(int64_t step, const std::vector<ManifestEntry>& shards,
                                                           const JobIdentity& job, int64_t createdUnixMs) {
  if (shards.empty()) return invalidArgument("commit step " + std::to_string(step) + ": no shard reported");
  CheckpointManifest m = manifestHeader(step, static_cast<int>(shards.size()), job, createdUnixMs);
  m.shards = shards;
  for (int r = 0; r < m.worldSize; ++r) {
    const std::string path = shardPath(step, r);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return notFound("commit step " + std::to_string(step) + ": " + path + ": " + std::strerror(errno));
    }
    if (static_cast<uint64_t>(st.st_size) != shards[static_cast<size_t>(r)].bytes) {
      return dataLoss("commit step " + std::to_string(step) + ": " + path + " has " + std::to_string(st.st_size) +
                      " bytes, rank " + std::to_string(r) + " reported " +
                      std::to_string(shards[static_cast<size_t>(r)].bytes));
    }
  }
  DDP_RETURN_IF_ERROR(writeFileAtomic(manifestPath(step), encodeManifest(m)));
  return m;
}

Result<CheckpointManifest> CheckpointStore::commit(int64_t step, int worldSize,
                                                   const JobIdentity& job, int64_t createdUnixMs) {
  if (worldSize <= 0) return invalidArgument("commit: world size must be positive");
  CheckpointManifest m = manifestHeader(step, worldSize, job, createdUnixMs);
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

Result<CheckpointManifest> CheckpointStore::readManifest(int64_t step) const {
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
  return m;
}

Result<CheckpointManifest> CheckpointStore::verify(int64_t step) const {
  DDP_ASSIGN_OR_RETURN(CheckpointManifest m, readManifest(step));
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

Result<std::vector<int64_t>> CheckpointStore::ownCommittedSteps(const JobIdentity& job) const {
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  std::vector<int64_t> own;
  for (int64_t step : steps) {
    auto m = readManifest(step);
    if (m.isOk() && isOwnCheckpoint(matchJob(*m, job))) own.push_back(step);
  }
  return own;
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
  return findLatest(worldSize, nullptr);
}

Result<LatestCheckpoint> CheckpointStore::findLatestComplete(int worldSize, const JobIdentity& job) const {
  return findLatest(worldSize, &job);
}

Result<LatestCheckpoint> CheckpointStore::findLatest(int worldSize, const JobIdentity* job) const {
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  LatestCheckpoint out;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    auto m = verify(*it);
    if (!m.isOk()) {
      out.skipped.push_back("step " + std::to_string(*it) + ": " + m.status().message());
      continue;
    }
    if (job != nullptr) {
      const JobMatch match = matchJob(*m, *job);
      if (!isOwnCheckpoint(match)) {
        out.skipped.push_back("step " + std::to_string(*it) + ": written by job " + quoted(m->job) +
                              (match == JobMatch::kOtherSpec ? " with a different spec" : ""));
        continue;
      }
    }
    // Any checkpoint loads at any world size (docs/ELASTIC.md): another world size is no reason
    // to skip one; the caller reports the change.
    (void)worldSize;
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

Status CheckpointStore::applyRetention(int keep, const JobIdentity& job, int64_t committedStep) const {
  if (keep <= 0) return Status::ok();
  DDP_ASSIGN_OR_RETURN(std::vector<int64_t> steps, listSteps());
  struct Own {
    int64_t step;
    int64_t createdUnixMs;
  };
  std::vector<Own> own;       // this job's complete checkpoints
  std::vector<int64_t> dead;  // incomplete, not another job's
  for (int64_t step : steps) {
    auto m = readManifest(step);
    if (m.isOk() && !isOwnCheckpoint(matchJob(*m, job))) continue;  // another job's: never touched
    if (m.isOk() && verify(step).isOk()) {
      own.push_back({step, m->createdUnixMs});
    } else {
      dead.push_back(step);
    }
  }
  if (own.empty()) return Status::ok();
  // Newest first: the step just committed, then by commit time, then by step.
  std::sort(own.begin(), own.end(), [&](const Own& a, const Own& b) {
    if ((a.step == committedStep) != (b.step == committedStep)) return a.step == committedStep;
    if (a.createdUnixMs != b.createdUnixMs) return a.createdUnixMs > b.createdUnixMs;
    return a.step > b.step;
  });
  for (size_t i = static_cast<size_t>(keep); i < own.size(); ++i) {
    DDP_RETURN_IF_ERROR(removeAll(stepDir(own[i].step)));
  }
  const int64_t newest = own.front().step;
  for (int64_t step : dead) {
    if (step < newest) DDP_RETURN_IF_ERROR(removeAll(stepDir(step)));
  }
  return syncDir(root_);
}

}  // namespace ddp::runtime
