#pragma once
// Pure planner for DistributedFusedAdam's contiguous buffers (Note [DFA layout]).
//
// Note [DFA layout]
// Parameters are packed back to back into buckets in REVERSE position order (backward produces
// gradients last layer first, so bucket 0 fills first and is reduce-scattered while backward
// goes on). A bucket closes when adding the next parameter would pass the cap; a parameter is
// never split across buckets (one larger than the cap gets a bucket of its own). Each bucket is
// padded to world * shardElems elements, where shardElems is a multiple of 32 floats (128
// bytes), and rank r owns elements [r * shardElems, (r + 1) * shardElems) of every bucket.
// Thread model: pure functions.

#include <cstddef>
#include <vector>

namespace ddp::optim {

inline constexpr size_t kDfaShardAlignElems = 32;  // 128 bytes of f32

struct DfaBucket {
  std::vector<size_t> params;   // positions, in packing order
  std::vector<size_t> offsets;  // element offset of each within the bucket
  size_t usedElems = 0;         // elements holding parameters (before padding)
  size_t shardElems = 0;        // per-rank shard (aligned)
  size_t paddedElems() const { return shardElems * worldSize; }
  size_t worldSize = 1;
};

struct DfaLayout {
  std::vector<DfaBucket> buckets;
  std::vector<size_t> bucketOf;   // bucketOf[i] = bucket of parameter i
  std::vector<size_t> offsetOf;   // offsetOf[i] = element offset of parameter i in its bucket
  size_t shardElemsTotal() const;  // sum of shardElems over buckets
};

DfaLayout planDfaLayout(const std::vector<size_t>& numels, int world, size_t bucketCapElems);

// A run of elements of one rank's shard of a bucket that all decay, or all do not.
struct DfaDecayRun {
  size_t offset = 0;  // within the shard
  size_t count = 0;
  bool decay = true;
};

// Rank `rank`'s shard of `bucket` cut into maximal runs by decay[position] (decay has one entry
// per parameter of the model): a parameter's elements decay or not wherever the shard
// boundaries cut it. The runs cover the whole shard in order; padding joins the run before it
// (its elements stay zero either way), a shard of padding only is one decaying run.
std::vector<DfaDecayRun> dfaDecayRuns(const DfaBucket& bucket, int rank, const std::vector<bool>& decay);

}  // namespace ddp::optim
