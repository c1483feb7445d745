// DistributedFusedAdam's state dict: chunked gather to one rank and resharding load.
//
// Note [DFA state stream]
// Layout (little endian): magic u32 "DFAS", version u32 (1), payload length u64, payload,
// crc32(payload) u32 as a trailer (so the stream can be written before the CRC is known).
// Payload: kind u8, lr f32, beta1 f32, beta2 f32, eps f32, weightDecay f32, step i64,
// count u64, count x (position u64, numel u64) in stream order, then exp_avg of every
// parameter in stream order, then exp_avg_sq likewise. No padding, no world size: any rank
// count or bucket cap can load it.
// Gathering: for each slot and bucket, the used elements are cut into chunks that lie inside
// one owner's shard and hold at most stateChunkBytes; the owner sends each chunk straight from
// its shard (no copy) and the root receives it into one reusable chunk buffer and hands it to
// the sink. The root's only temporary is that buffer, whatever the model size.

#include <algorithm>
#include <cstring>

#include "common/binary_io.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/reshard_plan.h"

namespace ddp::optim {
namespace {

constexpr uint32_t kDfaStateMagic = 0x53414644;  // "DFAS"
constexpr uint32_t kDfaStateVersion = 1;
constexpr size_t kPreamble = 4 + 4 + 8;

}  // namespace

Status DistributedFusedAdam::gatherStateDict(int root, const StateSink& sink, Deadline deadline) {
  if (root < 0 || root >= world_) return invalidArgument("DistributedFusedAdam::gatherStateDict: bad root " + std::to_string(root));
  const bool isRoot = rank_ == root;
  lastGatherPeakTempBytes_ = 0;
  uint32_t crc = 0;
  auto emit = [&](const void* data, size_t n) -> Status {
    crc = crc32(data, n, crc);
    return sink(std::string_view(static_cast<const char*>(data), n));
  };
  size_t usedTotal = 0;
  for (const auto& b : layout_.buckets) usedTotal += b.usedElems;
  if (isRoot) {
    BinaryWriter w;
    const OptimizerConfig& c = options_.config;
    w.put<uint8_t>(static_cast<uint8_t>(c.kind));
    for (float f : {c.lr, c.beta1, c.beta2, c.eps, c.weightDecay}) w.put<float>(f);
    w.put<int64_t>(step_);
    w.put<uint64_t>(params_.size());
    for (const auto& b : layout_.buckets) {
      for (size_t i : b.params) {
        w.put<uint64_t>(i);
        w.put<uint64_t>(params_[i]->numel());
      }
    }
    const std::string& head = w.data();
    BinaryWriter pre;
    pre.put<uint32_t>(kDfaStateMagic);
    pre.put<uint32_t>(kDfaStateVersion);
    pre.put<uint64_t>(head.size() + 2 * usedTotal * sizeof(float));
    DDP_RETURN_IF_ERROR(sink(pre.data()));
    DDP_RETURN_IF_ERROR(emit(head.data(), head.size()));
  }
  const size_t chunkElems = std::max<size_t>(1, options_.stateChunkBytes / sizeof(float));
  std::vector<float> chunk;  // root only, reused
  std::vector<comm::WorkPtr> sends;
  Status result;
  int tag = 0;
  for (int slot = 0; slot < 2 && result.isOk(); ++slot) {
    const auto& shards = slot == 0 ? expAvg_ : expAvgSq_;
    for (size_t b = 0; b < layout_.buckets.size() && result.isOk(); ++b) {
      const DfaBucket& bk = layout_.buckets[b];
      for (size_t pos = 0; pos < bk.usedElems && result.isOk();) {
        const int owner = static_cast<int>(pos / bk.shardElems);
        const size_t shardEnd = (owner + 1) * bk.shardElems;
        const size_t n = std::min({bk.usedElems, shardEnd, pos + chunkElems}) - pos;
        const float* mine = shards[b].data() + (pos - owner * bk.shardElems);
        ++tag;
        if (owner == rank_ && isRoot) {
          result = emit(mine, n * sizeof(float));
        } else if (owner == rank_) {
          sends.push_back(pg_.send(comm::viewOf(const_cast<float*>(mine), n), root, tag));
        } else if (isRoot) {
          if (chunk.size() < n) {
            chunk.resize(n);
            lastGatherPeakTempBytes_ = std::max(lastGatherPeakTempBytes_, chunk.capacity() * sizeof(float));
          }
          auto w = pg_.recv(comm::viewOf(chunk.data(), n), owner, tag);
          Status st = w->wait(deadline);
          if (!st.isOk() && !w->isCompleted()) (void)w->wait();
          result = st.isOk() ? emit(chunk.data(), n * sizeof(float)) : st.withContext("DFA state gather recv");
        }
        pos += n;
      }
    }
  }
  for (auto& w : sends) {
    Status st = w->wait(deadline);
    if (!st.isOk() && !w->isCompleted()) (void)w->wait();
    if (!st.isOk() && result.isOk()) result = st.withContext("DFA state gather send");
  }
  DDP_RETURN_IF_ERROR(result);
  if (isRoot) {
    BinaryWriter tail;
    tail.put<uint32_t>(crc);
    DDP_RETURN_IF_ERROR(sink(tail.data()));
  }
  return Status::ok();
}

Result<std::string> DistributedFusedAdam::stateDict(int root, Deadline deadline) {
  std::string out;
  DDP_RETURN_IF_ERROR(gatherStateDict(
      root,
      [&](std::string_view bytes) {
        out.append(bytes);
        return Status::ok();
      },
      deadline));
  return out;
}

Status DistributedFusedAdam::loadStateDict(std::string_view state) {
  const std::string what = "DistributedFusedAdam state";
  BinaryReader pre(state, what);
  uint32_t magic = 0, version = 0, crc = 0;
  uint64_t len = 0;
  DDP_RETURN_IF_ERROR(pre.get(&magic));
  if (magic != kDfaStateMagic) return dataLoss(what + ": bad magic");
  DDP_RETURN_IF_ERROR(pre.get(&version));
  if (version == 0 || version > kDfaStateVersion) return dataLoss(what + ": unsupported version " + std::to_string(version));
  DDP_RETURN_IF_ERROR(pre.get(&len));
  if (state.size() < kPreamble + 4 || len != state.size() - kPreamble - 4) {
    return dataLoss(what + ": payload length " + std::to_string(len) + " does not match " +
                    std::to_string(state.size()) + " bytes (truncated?)");
  }
  const std::string_view payload = state.substr(kPreamble, len);
  std::memcpy(&crc, state.data() + kPreamble + len, 4);
  if (crc32(payload.data(), payload.size()) != crc) return dataLoss(what + ": checksum mismatch");

  BinaryReader r(payload, what);
  uint8_t kind = 0;
  OptimizerConfig c = options_.config;
  DDP_RETURN_IF_ERROR(r.get(&kind));
  if (kind != static_cast<uint8_t>(c.kind)) {
    return invalidArgument(what + ": saved by " + optimizerKindName(static_cast<OptimizerKind>(kind & 3)) +
                           ", loading into " + optimizerKindName(c.kind));
  }
  for (float* f : {&c.lr, &c.beta1, &c.beta2, &c.eps, &c.weightDecay}) DDP_RETURN_IF_ERROR(r.get(f));
  int64_t step = 0;
  uint64_t count = 0;
  DDP_RETURN_IF_ERROR(r.get(&step));
  DDP_RETURN_IF_ERROR(r.get(&count));
  if (count != params_.size()) {
    return invalidArgument(what + ": has " + std::to_string(count) + " parameters, model has " +
                           std::to_string(params_.size()));
  }
  std::vector<size_t> order;  // the stream's parameter order
  std::vector<bool> seen(params_.size(), false);
  std::vector<size_t> numels(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) numels[i] = params_[i]->numel();
  size_t off = 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t idx = 0, numel = 0;
    DDP_RETURN_IF_ERROR(r.get(&idx));
    DDP_RETURN_IF_ERROR(r.get(&numel));
    if (idx >= params_.size() || seen[idx] || numel != params_[idx]->numel()) {
      return invalidArgument(what + ": record " + std::to_string(k) + " (position " + std::to_string(idx) + ", " +
                             std::to_string(numel) + " elements) does not match the model");
    }
    seen[idx] = true;
    order.push_back(idx);
    off += numel;
  }
  if (r.remaining() != 2 * off * sizeof(float)) return dataLoss(what + ": value section has the wrong size");
  const char* values = payload.data() + (payload.size() - r.remaining());
  // Note [Reshard plan]: the stream is one holder's shard; this rank's part of the new layout.
  DDP_ASSIGN_OR_RETURN(std::vector<ReshardMove> moves,
                       planReshardTo(streamLayout(order, numels), dfaShardLayout(layout_, numels, world_), rank_));
  for (size_t b = 0; b < layout_.buckets.size(); ++b) {
    std::fill(expAvg_[b].begin(), expAvg_[b].end(), 0.f);
    std::fill(expAvgSq_[b].begin(), expAvgSq_[b].end(), 0.f);
  }
  size_t b = 0, bucketBase = 0;  // moves ascend in the flat shard: walk the buckets along
  for (const ReshardMove& m : moves) {
    if (m.count == 0) continue;
    while (m.toOffset >= bucketBase + layout_.buckets[b].shardElems) bucketBase += layout_.buckets[b++].shardElems;
    const size_t dst = m.toOffset - bucketBase;
    std::memcpy(expAvg_[b].data() + dst, values + m.fromOffset * sizeof(float), m.count * sizeof(float));
    std::memcpy(expAvgSq_[b].data() + dst, values + (off + m.fromOffset) * sizeof(float), m.count * sizeof(float));
  }
  options_.config = c;
  step_ = step;
  return Status::ok();
}

}  // namespace ddp::optim
