#include "worker/ddp/powersgd_state.h"

#include "common/binary_io.h"
#include "common/fnv1a.h"

namespace ddp {

uint64_t stableHash(std::string_view s) { return fnv1a(s); }

namespace {

constexpr const char* kWhat = "PowerSGD state";

Status checkSize(const std::vector<float>& v, uint64_t want, const std::string& what) {
  if (!v.empty() && v.size() != want) {
    return dataLoss(std::string(kWhat) + ": " + what + " holds " + std::to_string(v.size()) +
                    " values, its shape says " + std::to_string(want));
  }
  return Status::ok();
}

}  // namespace

std::string PowerSgdState::serialize() const {
  BinaryWriter w;
  w.putString(hookName);
  w.put<int32_t>(worldSize);
  w.put<int32_t>(rank);
  w.put<uint64_t>(iteration);
  w.put<uint64_t>(randomSeed);
  w.put<uint64_t>(stats.numelBeforeCompression);
  w.put<uint64_t>(stats.numelAfterCompression);
  w.put<uint64_t>(stats.bytesBeforeCompression);
  w.put<uint64_t>(stats.bytesAfterCompression);
  w.put<uint64_t>(nextStatsReport);
  w.put<uint64_t>(tensors.size());
  for (const auto& [key, t] : tensors) {
    w.putString(key);
    w.put<uint64_t>(t.rows);
    w.put<uint64_t>(t.cols);
    w.put<uint64_t>(t.rank);
    w.putVector(t.error);
    w.putVector(t.q);
  }
  w.put<uint64_t>(buckets.size());
  for (const auto& [identity, b] : buckets) {
    w.put<uint64_t>(identity);
    w.put<uint64_t>(b.side);
    w.put<uint64_t>(b.rank);
    w.putVector(b.q);
  }
  return writeFramed(kMagic, kVersion, w.data());
}

Result<PowerSgdState> PowerSgdState::deserialize(std::string_view bytes) {
  uint32_t version = 0;
  DDP_ASSIGN_OR_RETURN(std::string payload, readFramed(bytes, kMagic, kVersion, &version, kWhat));
  BinaryReader r(payload, kWhat);
  PowerSgdState s;
  DDP_RETURN_IF_ERROR(r.getString(&s.hookName));
  DDP_RETURN_IF_ERROR(r.get(&s.worldSize));
  DDP_RETURN_IF_ERROR(r.get(&s.rank));
  DDP_RETURN_IF_ERROR(r.get(&s.iteration));
  DDP_RETURN_IF_ERROR(r.get(&s.randomSeed));
  DDP_RETURN_IF_ERROR(r.get(&s.stats.numelBeforeCompression));
  DDP_RETURN_IF_ERROR(r.get(&s.stats.numelAfterCompression));
  DDP_RETURN_IF_ERROR(r.get(&s.stats.bytesBeforeCompression));
  DDP_RETURN_IF_ERROR(r.get(&s.stats.bytesAfterCompression));
  DDP_RETURN_IF_ERROR(r.get(&s.nextStatsReport));
  uint64_t nTensors = 0;
  DDP_RETURN_IF_ERROR(r.get(&nTensors));
  for (uint64_t i = 0; i < nTensors; ++i) {
    std::string key;
    PowerSgdTensorState t;
    DDP_RETURN_IF_ERROR(r.getString(&key));
    DDP_RETURN_IF_ERROR(r.get(&t.rows));
    DDP_RETURN_IF_ERROR(r.get(&t.cols));
    DDP_RETURN_IF_ERROR(r.get(&t.rank));
    DDP_RETURN_IF_ERROR(r.getVector(&t.error));
    DDP_RETURN_IF_ERROR(r.getVector(&t.q));
    DDP_RETURN_IF_ERROR(checkSize(t.error, t.rows * t.cols, "error of '" + key + "'"));
    DDP_RETURN_IF_ERROR(checkSize(t.q, t.cols * t.rank, "Q of '" + key + "'"));
    if (!s.tensors.emplace(std::move(key), std::move(t)).second) {
      return dataLoss(std::string(kWhat) + ": duplicate tensor key");
    }
  }
  uint64_t nBuckets = 0;
  DDP_RETURN_IF_ERROR(r.get(&nBuckets));
  for (uint64_t i = 0; i < nBuckets; ++i) {
    uint64_t identity = 0;
    PowerSgdBucketState b;
    DDP_RETURN_IF_ERROR(r.get(&identity));
    DDP_RETURN_IF_ERROR(r.get(&b.side));
    DDP_RETURN_IF_ERROR(r.get(&b.rank));
    DDP_RETURN_IF_ERROR(r.getVector(&b.q));
    DDP_RETURN_IF_ERROR(checkSize(b.q, b.side * b.rank, "Q of bucket " + std::to_string(identity)));
    if (!s.buckets.emplace(identity, std::move(b)).second) {
      return dataLoss(std::string(kWhat) + ": duplicate bucket identity");
    }
  }
  if (!r.atEnd()) {
    return dataLoss(std::string(kWhat) + ": " + std::to_string(r.remaining()) + " unexpected trailing bytes");
  }
  return s;
}

Result<PowerSgdState> redistributeErrorFeedback(const std::vector<PowerSgdState>& saved, int newRank, int newWorld,
                                                size_t* dropped) {
  if (saved.empty()) return invalidArgument(std::string(kWhat) + ": nothing to redistribute");
  if (newWorld < 1 || newRank < 0 || newRank >= newWorld) {
    return invalidArgument(std::string(kWhat) + ": rank " + std::to_string(newRank) + " of world " +
                           std::to_string(newWorld));
  }
  const PowerSgdState& first = saved.front();
  for (size_t r = 1; r < saved.size(); ++r) {
    if (saved[r].hookName != first.hookName || saved[r].iteration != first.iteration) {
      return invalidArgument(std::string(kWhat) + ": saved rank " + std::to_string(r) + " holds '" +
                             saved[r].hookName + "' at iteration " + std::to_string(saved[r].iteration) +
                             ", rank 0 '" + first.hookName + "' at iteration " + std::to_string(first.iteration));
    }
  }
  PowerSgdState out = first;  // Note [Error feedback at another world size]
  out.worldSize = newWorld;
  out.rank = newRank;
  size_t lost = 0;
  const double n = static_cast<double>(saved.size());
  for (auto& [key, t] : out.tensors) {
    const size_t numel = static_cast<size_t>(t.rows * t.cols);
    std::vector<double> sum(numel, 0.0);
    bool any = false, consistent = true;
    for (const PowerSgdState& s : saved) {
      auto it = s.tensors.find(key);
      if (it == s.tensors.end() || it->second.error.empty()) continue;
      if (it->second.rows != t.rows || it->second.cols != t.cols || it->second.error.size() != numel) {
        consistent = false;
        break;
      }
      any = true;
      for (size_t k = 0; k < numel; ++k) sum[k] += it->second.error[k];
    }
    if (!consistent) ++lost;
    t.error.clear();
    if (!consistent || !any) continue;
    t.error.resize(numel);
    for (size_t k = 0; k < numel; ++k) t.error[k] = static_cast<float>(sum[k] / n);
  }
  if (dropped != nullptr) *dropped = lost;
  return out;
}

}  // namespace ddp
