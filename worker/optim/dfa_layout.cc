#include "worker/optim/dfa_layout.h"

#include <algorithm>

namespace ddp::optim {

size_t DfaLayout::shardElemsTotal() const {
  size_t n = 0;
  for (const auto& b : buckets) n += b.shardElems;
  return n;
}

DfaLayout planDfaLayout(const std::vector<size_t>& numels, int world, size_t bucketCapElems) {
  DfaLayout out;
  out.bucketOf.assign(numels.size(), 0);
  out.offsetOf.assign(numels.size(), 0);
  const size_t w = static_cast<size_t>(world < 1 ? 1 : world);
  auto close = [&](DfaBucket& b) {
    const size_t perRank = (b.usedElems + w - 1) / w;
    b.shardElems = (perRank + kDfaShardAlignElems - 1) / kDfaShardAlignElems * kDfaShardAlignElems;
    if (b.shardElems == 0) b.shardElems = kDfaShardAlignElems;
    b.worldSize = w;
    out.buckets.push_back(std::move(b));
  };
  DfaBucket cur;
  for (size_t k = numels.size(); k-- > 0;) {
    if (!cur.params.empty() && cur.usedElems + numels[k] > bucketCapElems) {
      close(cur);
      cur = DfaBucket{};
    }
    out.bucketOf[k] = out.buckets.size();
    out.offsetOf[k] = cur.usedElems;
    cur.params.push_back(k);
    cur.offsets.push_back(cur.usedElems);
    cur.usedElems += numels[k];
  }
  if (!cur.params.empty()) close(cur);
  return out;
}

std::vector<DfaDecayRun> dfaDecayRuns(const DfaBucket& bucket, int rank, const std::vector<bool>& decay) {
  std::vector<DfaDecayRun> runs;
  const size_t lo = static_cast<size_t>(rank) * bucket.shardElems, hi = lo + bucket.shardElems;
  // Segments arrive in element order and touch each other: a run grows while the flag holds.
  auto add = [&](size_t s, size_t e, bool d) {
    if (s >= e) return;
    if (!runs.empty() && runs.back().decay == d) {
      runs.back().count += e - s;
    } else {
      runs.push_back({s - lo, e - s, d});
    }
  };
  for (size_t k = 0; k < bucket.params.size(); ++k) {
    const size_t o = bucket.offsets[k];
    const size_t e = k + 1 < bucket.params.size() ? bucket.offsets[k + 1] : bucket.usedElems;
    add(std::max(o, lo), std::min(e, hi), decay[bucket.params[k]]);
  }
  add(std::max(bucket.usedElems, lo), hi, runs.empty() || runs.back().decay);
  return runs;
}

}  // namespace ddp::optim
