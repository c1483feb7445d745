#include "worker/optim/dfa_layout.h"

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

}  // namespace ddp::optim
