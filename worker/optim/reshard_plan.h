#pragma once
// Pure resharding planner: which element ranges of which old shard go to which new rank when
// sharded optimizer state saved by N ranks is loaded by M ranks (Note [Reshard plan]).
//
// Note [Reshard plan]
// A ShardLayout says where every element of every parameter lives: the parameter's elements are
// cut into runs, each held by one rank at an offset of that rank's flat shard (the rank's
// optimizer state values of one slot, back to back). Three layouts exist:
//  - ZeRO-1 (zeroShardLayout): parameter i whole on partitionParameters(numels, world)[i]; a
//    rank's shard is its parameters in ascending position, back to back (never split);
//  - DistributedFusedAdam (dfaShardLayout): bucket b's slice [r * shardElems, (r + 1) *
//    shardElems) on rank r, at the offset sum of the earlier buckets' shardElems in r's shard; a
//    parameter can straddle shard boundaries and is then split;
//  - a stream (streamLayout): one holder (rank 0) with the parameters back to back in a given
//    order, the DFA state stream (Note [DFA state stream]).
// planReshard(from, to) intersects, per parameter, the old runs with the new ones: each
// ReshardMove copies `count` elements from old rank `fromRank` at `fromOffset` to new rank
// `toRank` at `toOffset`, and names the parameter range it carries. Every element of every
// parameter is moved exactly once; a parameter of 0 elements gets one move of 0 elements (so
// record-keyed state like ZeRO's still finds its owner). The optimizers carry the plan out:
// ZeRO decodes only the old shards its new parameters come from (sourceRanks) and copies their
// records; DFA copies the moved ranges of the state stream into its bucket shards.
// Thread model: pure functions.

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "worker/optim/dfa_layout.h"

namespace ddp::optim {

// `count` elements of parameter `param` from `paramOffset` on, held by `rank` at `shardOffset`.
struct ShardRun {
  size_t param = 0;
  size_t paramOffset = 0;
  size_t count = 0;
  int rank = 0;
  size_t shardOffset = 0;
};

struct ShardLayout {
  int worldSize = 1;
  std::vector<size_t> numels;  // per parameter (model position)
  std::vector<ShardRun> runs;  // any order
  // InvalidArgument unless the runs cover every element of every parameter exactly once (a
  // 0-element parameter: exactly one run of 0 elements), ranks lie in [0, worldSize) and no two
  // runs of a rank overlap in its shard.
  Status validate() const;
  // Elements in rank r's flat shard (the end of its last run).
  size_t shardElems(int rank) const;
};

// ZeRO-1 at `world` ranks (zero_partition.h).
ShardLayout zeroShardLayout(const std::vector<size_t>& numels, int world);
// DistributedFusedAdam's layout (dfa_layout.h, planned for `world` ranks) for parameters of
// `numels`.
ShardLayout dfaShardLayout(const DfaLayout& layout, const std::vector<size_t>& numels, int world);
// One holder (rank 0), parameters back to back in `order` (a permutation of the positions).
ShardLayout streamLayout(const std::vector<size_t>& order, const std::vector<size_t>& numels);

struct ReshardMove {
  int fromRank = 0;
  size_t fromOffset = 0;  // in the old rank's flat shard
  int toRank = 0;
  size_t toOffset = 0;    // in the new rank's flat shard
  size_t count = 0;
  size_t param = 0;       // what moves: elements [paramOffset, paramOffset + count) of param
  size_t paramOffset = 0;
  bool operator==(const ReshardMove&) const = default;
};

// Every move, grouped by new rank (result[r]: the moves into rank r, ascending toOffset).
// InvalidArgument when a layout is invalid or the two describe different parameters.
Result<std::vector<std::vector<ReshardMove>>> planReshard(const ShardLayout& from, const ShardLayout& to);
// The moves into `toRank` only (what one new rank needs at load).
Result<std::vector<ReshardMove>> planReshardTo(const ShardLayout& from, const ShardLayout& to, int toRank);
// The old ranks `moves` read from, ascending, without duplicates.
std::vector<int> sourceRanks(const std::vector<ReshardMove>& moves);

}  // namespace ddp::optim
