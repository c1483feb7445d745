#include "worker/optim/reshard_plan.h"

#include <algorithm>
#include <string>

#include "worker/optim/zero_partition.h"

namespace ddp::optim {
namespace {

// Runs of each parameter, ascending paramOffset.
std::vector<std::vector<const ShardRun*>> runsByParam(const ShardLayout& l) {
  std::vector<std::vector<const ShardRun*>> out(l.numels.size());
  for (const ShardRun& r : l.runs) {
    if (r.param < out.size()) out[r.param].push_back(&r);
  }
  for (auto& v : out) {
    std::sort(v.begin(), v.end(), [](const ShardRun* a, const ShardRun* b) { return a->paramOffset < b->paramOffset; });
  }
  return out;
}

}  // namespace

Status ShardLayout::validate() const {
  if (worldSize < 1) return invalidArgument("shard layout: world size " + std::to_string(worldSize));
  for (const ShardRun& r : runs) {
    if (r.param >= numels.size() || r.rank < 0 || r.rank >= worldSize || r.paramOffset + r.count > numels[r.param]) {
      return invalidArgument("shard layout: run of parameter " + std::to_string(r.param) + " on rank " +
                             std::to_string(r.rank) + " lies outside the layout");
    }
  }
  const auto byParam = runsByParam(*this);
  for (size_t p = 0; p < numels.size(); ++p) {
    const auto& v = byParam[p];
    if (numels[p] == 0) {
      if (v.size() != 1) return invalidArgument("shard layout: empty parameter " + std::to_string(p) + " needs one run");
      continue;
    }
    size_t next = 0;
    for (const ShardRun* r : v) {
      if (r->count == 0 || r->paramOffset != next) {
        return invalidArgument("shard layout: parameter " + std::to_string(p) + " is not covered exactly once at element " +
                               std::to_string(next));
      }
      next += r->count;
    }
    if (next != numels[p]) {
      return invalidArgument("shard layout: parameter " + std::to_string(p) + " is covered up to element " +
                             std::to_string(next) + " of " + std::to_string(numels[p]));
    }
  }
  // No two runs of a rank overlap in its shard.
  std::vector<std::vector<const ShardRun*>> byRank(static_cast<size_t>(worldSize));
  for (const ShardRun& r : runs) {
    if (r.count > 0) byRank[static_cast<size_t>(r.rank)].push_back(&r);
  }
  for (size_t k = 0; k < byRank.size(); ++k) {
    auto& v = byRank[k];
    std::sort(v.begin(), v.end(), [](const ShardRun* a, const ShardRun* b) { return a->shardOffset < b->shardOffset; });
    for (size_t j = 1; j < v.size(); ++j) {
      if (v[j - 1]->shardOffset + v[j - 1]->count > v[j]->shardOffset) {
        return invalidArgument("shard layout: runs overlap in rank " + std::to_string(k) + "'s shard at element " +
                               std::to_string(v[j]->shardOffset));
      }
    }
  }
  return Status::ok();
}

size_t ShardLayout::shardElems(int rank) const {
  size_t end = 0;
  for (const ShardRun& r : runs) {
    if (r.rank == rank) end = std::max(end, r.shardOffset + r.count);
  }
  return end;
}

ShardLayout zeroShardLayout(const std::vector<size_t>& numels, int world) {
  ShardLayout l;
  l.worldSize = std::max(world, 1);
  l.numels = numels;
  const std::vector<int> owners = partitionParameters(numels, l.worldSize);
  std::vector<size_t> fill(static_cast<size_t>(l.worldSize), 0);
  for (size_t i = 0; i < numels.size(); ++i) {  // ascending position: each rank's shard order
    const int r = owners[i];
    l.runs.push_back({i, 0, numels[i], r, fill[static_cast<size_t>(r)]});
    fill[static_cast<size_t>(r)] += numels[i];
  }
  return l;
}

ShardLayout dfaShardLayout(const DfaLayout& layout, const std::vector<size_t>& numels, int world) {
  ShardLayout l;
  l.worldSize = std::max(world, 1);
  l.numels = numels;
  size_t bucketBase = 0;  // offset of this bucket's slice in every rank's shard
  for (const DfaBucket& b : layout.buckets) {
    for (size_t k = 0; k < b.params.size(); ++k) {
      const size_t p = b.params[k], begin = b.offsets[k], end = begin + numels[p];
      if (begin == end) {  // a 0-element parameter: held where its offset falls
        const size_t r = std::min(begin / b.shardElems, b.worldSize - 1);
        l.runs.push_back({p, 0, 0, static_cast<int>(r), bucketBase + (begin - r * b.shardElems)});
        continue;
      }
      for (size_t pos = begin; pos < end;) {
        const size_t r = pos / b.shardElems;
        const size_t n = std::min(end, (r + 1) * b.shardElems) - pos;
        l.runs.push_back({p, pos - begin, n, static_cast<int>(r), bucketBase + (pos - r * b.shardElems)});
        pos += n;
      }
    }
    bucketBase += b.shardElems;
  }
  return l;
}

ShardLayout streamLayout(const std::vector<size_t>& order, const std::vector<size_t>& numels) {
  ShardLayout l;
  l.numels = numels;
  size_t off = 0;
  for (size_t p : order) {
    const size_t n = p < numels.size() ? numels[p] : 0;
    l.runs.push_back({p, 0, n, 0, off});
    off += n;
  }
  return l;
}

Result<std::vector<std::vector<ReshardMove>>> planReshard(const ShardLayout& from, const ShardLayout& to) {
  DDP_RETURN_IF_ERROR(from.validate().withContext("reshard plan: old layout"));
  DDP_RETURN_IF_ERROR(to.validate().withContext("reshard plan: new layout"));
  if (from.numels != to.numels) {
    return invalidArgument("reshard plan: the old layout has " + std::to_string(from.numels.size()) +
                           " parameters, the new one " + std::to_string(to.numels.size()) +
                           " (or their sizes differ)");
  }
  std::vector<std::vector<ReshardMove>> out(static_cast<size_t>(to.worldSize));
  const auto olds = runsByParam(from), news = runsByParam(to);
  for (size_t p = 0; p < from.numels.size(); ++p) {
    if (from.numels[p] == 0) {
      const ShardRun& a = *olds[p].front();
      const ShardRun& b = *news[p].front();
      out[static_cast<size_t>(b.rank)].push_back({a.rank, a.shardOffset, b.rank, b.shardOffset, 0, p, 0});
      continue;
    }
    // Both cover [0, numel) in order: walk them together.
    size_t i = 0, j = 0;
    while (i < olds[p].size() && j < news[p].size()) {
      const ShardRun& a = *olds[p][i];
      const ShardRun& b = *news[p][j];
      const size_t lo = std::max(a.paramOffset, b.paramOffset);
      const size_t hi = std::min(a.paramOffset + a.count, b.paramOffset + b.count);
      if (lo < hi) {
        out[static_cast<size_t>(b.rank)].push_back({a.rank, a.shardOffset + (lo - a.paramOffset), b.rank,
                                                    b.shardOffset + (lo - b.paramOffset), hi - lo, p, lo});
      }
      if (a.paramOffset + a.count <= b.paramOffset + b.count) ++i;
      else ++j;
    }
  }
  for (auto& v : out) {
    std::sort(v.begin(), v.end(), [](const ReshardMove& a, const ReshardMove& b) {
      return a.toOffset != b.toOffset ? a.toOffset < b.toOffset : a.param < b.param;
    });
  }
  return out;
}

Result<std::vector<ReshardMove>> planReshardTo(const ShardLayout& from, const ShardLayout& to, int toRank) {
  if (toRank < 0 || toRank >= to.worldSize) {
    return invalidArgument("reshard plan: rank " + std::to_string(toRank) + " outside the new world of " +
                           std::to_string(to.worldSize));
  }
  DDP_ASSIGN_OR_RETURN(auto all, planReshard(from, to));
  return std::move(all[static_cast<size_t>(toRank)]);
}

std::vector<int> sourceRanks(const std::vector<ReshardMove>& moves) {
  std::vector<int> out;
  for (const ReshardMove& m : moves) out.push_back(m.fromRank);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace ddp::optim
