#include "worker/optim/zero_redundancy_optimizer.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/binary_io.h"
#include "worker/join/join.h"
#include "worker/optim/grad_norm.h"
#include "worker/optim/reshard_plan.h"
#include "worker/optim/zero_partition.h"

namespace ddp::optim {
namespace {

class ZeroJoinHook final : public join::JoinHook {
 public:
  explicit ZeroJoinHook(ZeroRedundancyOptimizer& zero) : zero_(zero) {}
  Status mainHook(Deadline deadline) override { return zero_.step(deadline); }

 private:
  ZeroRedundancyOptimizer& zero_;
};

// Waits for every Work (even after a failure, so no buffer is released while in use).
Status waitAll(const std::vector<comm::WorkPtr>& works, Deadline deadline, const char* what) {
  Status first;
  for (const auto& w : works) {
    Status st = w->wait(deadline);
    if (!st.isOk() && !w->isCompleted()) (void)w->wait();
    if (!st.isOk() && first.isOk()) first = st.withContext(what);
  }
  return first;
}

}  // namespace

Result<std::unique_ptr<ZeroRedundancyOptimizer>> ZeroRedundancyOptimizer::create(std::vector<Parameter*> params,
                                                                                 comm::Backend& pg,
                                                                                 const OptimizerConfig& config) {
  // Validate everything (dtype, device, config) on the full list first.
  DDP_ASSIGN_OR_RETURN(auto probe, makeOptimizer(config, params));
  probe.reset();
  std::vector<size_t> numels;
  numels.reserve(params.size());
  for (Parameter* p : params) numels.push_back(p->numel());
  std::vector<int> owners = partitionParameters(numels, pg.size());
  std::vector<Parameter*> mine;
  for (size_t i : ownedBy(owners, pg.rank())) mine.push_back(params[i]);
  DDP_ASSIGN_OR_RETURN(auto local, makeOptimizer(config, std::move(mine)));
  return std::unique_ptr<ZeroRedundancyOptimizer>(
      new ZeroRedundancyOptimizer(std::move(params), pg, std::move(owners), std::move(local)));
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Parameter*> params, comm::Backend& pg,
                                                 std::vector<int> owners, std::unique_ptr<Optimizer> local)
    : params_(std::move(params)), pg_(pg), owners_(std::move(owners)), local_(std::move(local)) {
  const int world = pg_.size();
  shardOf_.resize(world);
  shardNumel_.assign(world, 0);
  for (int r = 0; r < world; ++r) {
    shardOf_[r] = ownedBy(owners_, r);
    for (size_t i : shardOf_[r]) shardNumel_[r] += params_[i]->numel();
  }
  packed_.resize(world);
  for (int r = 0; r < world; ++r) packed_[r].resize(shardNumel_[r]);
}

Status ZeroRedundancyOptimizer::step(Deadline deadline) {
  DDP_ASSIGN_OR_RETURN(auto note, join::Join::notifyJoinContext(*this, deadline));
  (void)note;  // ZeRO does not need the active count; the notification keeps its buffer alive
  float gradScale = 1.f;
  if (maxGradNorm_ > 0) {
    // Note [ZeRO clipping and decay groups]: every rank holds the same averaged gradients.
    auto norm = globalGradNorm(params_);
    if (!norm.isOk()) return norm.status().withContext("ZeroRedundancyOptimizer clipping");
    lastGradNorm_ = *norm;
    gradScale = clipCoefficient(lastGradNorm_, maxGradNorm_);
  }
  DDP_RETURN_IF_ERROR(local_->step(gradScale).withContext("ZeroRedundancyOptimizer local step"));
  return syncParameters(deadline);
}

Status ZeroRedundancyOptimizer::setWeightDecayMask(const std::vector<bool>& mask) {
  if (!mask.empty() && mask.size() != params_.size()) {
    return invalidArgument("ZeroRedundancyOptimizer: weight decay mask has " + std::to_string(mask.size()) +
                           " entries, the model has " + std::to_string(params_.size()) + " parameters");
  }
  std::vector<bool> mine;
  if (!mask.empty()) {
    for (size_t i : shardOf_[pg_.rank()]) mine.push_back(mask[i]);
  }
  local_->setWeightDecayMask(std::move(mine));
  return Status::ok();
}

Status ZeroRedundancyOptimizer::syncParameters(Deadline deadline) {
  const int me = pg_.rank();
  std::vector<comm::WorkPtr> works;
  std::vector<int> roots;
  for (int r = 0; r < pg_.size(); ++r) {
    if (shardNumel_[r] == 0) continue;
    float* buf = packed_[r].data();
    if (r == me) {
      size_t off = 0;
      for (size_t i : shardOf_[r]) {
        // An empty parameter's data may be null (memcpy from null is undefined even for 0 bytes).
        if (params_[i]->bytes() > 0) std::memcpy(buf + off, params_[i]->data, params_[i]->bytes());
        off += params_[i]->numel();
      }
    }
    works.push_back(pg_.broadcast(comm::viewOf(buf, shardNumel_[r]), r));
    roots.push_back(r);
  }
  DDP_RETURN_IF_ERROR(waitAll(works, deadline, "ZeroRedundancyOptimizer parameter broadcast"));
  for (int r : roots) {
    if (r == me) continue;
    const float* buf = packed_[r].data();
    size_t off = 0;
    for (size_t i : shardOf_[r]) {
      if (params_[i]->bytes() > 0) std::memcpy(params_[i]->data, buf + off, params_[i]->bytes());
      off += params_[i]->numel();
    }
  }
  return Status::ok();
}

std::string ZeroRedundancyOptimizer::localStateDict() const {
  OptimizerState st = local_->exportState();
  const auto& mine = shardOf_[pg_.rank()];
  for (ParamRecord& r : st.params) r.index = mine[r.index];
  return st.encode();
}

Result<std::string> ZeroRedundancyOptimizer::consolidateStateDict(int to, Deadline deadline) {
  if (to < 0 || to >= pg_.size()) {
    return invalidArgument("consolidateStateDict: rank " + std::to_string(to) + " out of range for world " +
                           std::to_string(pg_.size()));
  }
  // Frames differ in size: agree on the largest, then gather length-prefixed padded frames.
  const std::string frame = localStateDict();
  int64_t maxLen = static_cast<int64_t>(frame.size());
  DDP_RETURN_IF_ERROR(pg_.allreduce(comm::viewOf(&maxLen, 1), comm::ReduceOp::kMax)
                          ->wait(deadline)
                          .withContext("consolidateStateDict size allreduce"));
  const size_t words = (sizeof(int64_t) + static_cast<size_t>(maxLen) + 3) / 4;
  std::vector<int32_t> in(words, 0);
  const int64_t len = static_cast<int64_t>(frame.size());
  std::memcpy(in.data(), &len, sizeof(len));
  std::memcpy(reinterpret_cast<char*>(in.data()) + sizeof(len), frame.data(), frame.size());
  std::vector<int32_t> out(pg_.rank() == to ? words * pg_.size() : 0);
  comm::BufferView outView = comm::viewOf(out.data(), out.size());
  auto w = pg_.gather(comm::viewOf(in.data(), words), outView, to);
  Status st = w->wait(deadline);
  if (!st.isOk()) {
    if (!w->isCompleted()) (void)w->wait();
    return st.withContext("consolidateStateDict gather");
  }
  if (pg_.rank() != to) return std::string();
  std::vector<OptimizerState> shards;
  for (int r = 0; r < pg_.size(); ++r) {
    const char* base = reinterpret_cast<const char*>(out.data() + r * words);
    int64_t n = 0;
    std::memcpy(&n, base, sizeof(n));
    if (n < 0 || n > maxLen) return dataLoss("consolidateStateDict: rank " + std::to_string(r) + " sent a bad length");
    DDP_ASSIGN_OR_RETURN(OptimizerState s, OptimizerState::decode(std::string_view(base + sizeof(n), n),
                                                                  "ZeRO shard of rank " + std::to_string(r)));
    shards.push_back(std::move(s));
  }
  DDP_ASSIGN_OR_RETURN(OptimizerState full, OptimizerState::merge(std::move(shards)));
  return full.encode();
}

Status ZeroRedundancyOptimizer::loadStateDict(std::string_view fullState) {
  DDP_ASSIGN_OR_RETURN(OptimizerState full, OptimizerState::decode(fullState, "ZeRO state dict"));
  return loadFull(full);
}

Status ZeroRedundancyOptimizer::loadShardStateDicts(const std::vector<std::string>& shards) {
  if (shards.empty()) return invalidArgument("ZeRO load: no shards");
  std::vector<size_t> numels;
  numels.reserve(params_.size());
  for (Parameter* p : params_) numels.push_back(p->numel());
  const int oldWorld = static_cast<int>(shards.size());
  DDP_ASSIGN_OR_RETURN(std::vector<ReshardMove> moves,
                       planReshardTo(zeroShardLayout(numels, oldWorld), zeroShardLayout(numels, pg_.size()),
                                     pg_.rank()));
  // Only the old shards this rank's parameters come from are decoded (Note [Reshard plan]); a
  // rank that owns nothing still reads rank 0's for the hyperparameters.
  std::vector<int> sources = sourceRanks(moves);
  if (sources.empty()) sources.push_back(0);
  std::map<int, OptimizerState> decoded;
  for (int r : sources) {
    DDP_ASSIGN_OR_RETURN(decoded[r], OptimizerState::decode(shards[static_cast<size_t>(r)],
                                                            "ZeRO shard of rank " + std::to_string(r) + " of " +
                                                                std::to_string(oldWorld)));
  }
  OptimizerState mine;
  mine.config = decoded.begin()->second.config;
  std::map<size_t, const ReshardMove*> moveOf;
  for (const ReshardMove& m : moves) moveOf[m.param] = &m;
  const auto& owned = shardOf_[pg_.rank()];
  for (size_t k = 0; k < owned.size(); ++k) {
    const size_t i = owned[k];
    const auto it = moveOf.find(i);
    if (it == moveOf.end() || it->second->count != params_[i]->numel()) {
      return internalError("ZeRO load: the reshard plan does not move parameter " + std::to_string(i) + " whole");
    }
    const int from = it->second->fromRank;
    OptimizerState& src = decoded[from];
    if (src.config.kind != mine.config.kind) {
      return invalidArgument(std::string("ZeRO load: shards mix ") + optimizerKindName(mine.config.kind) + " and " +
                             optimizerKindName(src.config.kind));
    }
    auto rec = std::lower_bound(src.params.begin(), src.params.end(), i,
                                [](const ParamRecord& r, size_t idx) { return r.index < idx; });
    if (rec == src.params.end() || rec->index != i) {
      return invalidArgument("ZeRO load: the shard of rank " + std::to_string(from) + " of " +
                             std::to_string(oldWorld) + " does not hold parameter " + std::to_string(i) + " (" +
                             params_[i]->name + ") that the partition of " + std::to_string(oldWorld) +
                             " ranks gives it (not a ZeRO checkpoint of this model?)");
    }
    if (rec->numel != params_[i]->numel()) {
      return invalidArgument("ZeRO load: record " + std::to_string(i) + " does not match parameter " +
                             params_[i]->name);
    }
    ParamRecord local = std::move(*rec);
    local.index = k;
    mine.params.push_back(std::move(local));
  }
  return local_->importState(mine);
}

Status ZeroRedundancyOptimizer::loadFull(const OptimizerState& full) {
  if (full.params.size() != params_.size()) {
    return invalidArgument("ZeRO load: state has " + std::to_string(full.params.size()) + " parameters, model has " +
                           std::to_string(params_.size()));
  }
  OptimizerState mine;
  mine.config = full.config;
  const auto& owned = shardOf_[pg_.rank()];
  for (size_t k = 0; k < owned.size(); ++k) {
    const size_t i = owned[k];
    const ParamRecord& r = full.params[i];
    if (r.index != i) return invalidArgument("ZeRO load: state is missing parameter " + std::to_string(i));
    ParamRecord local = r;
    local.index = k;
    mine.params.push_back(std::move(local));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (full.params[i].index != i || full.params[i].numel != params_[i]->numel()) {
      return invalidArgument("ZeRO load: record " + std::to_string(i) + " does not match parameter " +
                             params_[i]->name);
    }
  }
  return local_->importState(mine);
}

std::unique_ptr<join::JoinHook> ZeroRedundancyOptimizer::joinHook(const join::JoinHookOptions&) {
  return std::make_unique<ZeroJoinHook>(*this);
}

}  // namespace ddp::optim
