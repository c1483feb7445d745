#include "worker/optim/optimizer_state.h"

#include <algorithm>

#include "common/binary_io.h"

namespace ddp::optim {

std::string OptimizerState::encode() const {
  BinaryWriter w;
  w.put<uint8_t>(static_cast<uint8_t>(config.kind));
  w.put<float>(config.lr);
  w.put<float>(config.weightDecay);
  w.put<float>(config.momentum);
  w.put<float>(config.dampening);
  w.put<uint8_t>(config.nesterov ? 1 : 0);
  w.put<float>(config.beta1);
  w.put<float>(config.beta2);
  w.put<float>(config.eps);
  w.put<uint64_t>(params.size());
  for (const ParamRecord& r : params) {
    w.put<uint64_t>(r.index);
    w.putString(r.name);
    w.put<uint64_t>(r.numel);
    w.put<int64_t>(r.state.step);
    w.put<uint32_t>(static_cast<uint32_t>(r.state.slots.size()));
    for (const auto& s : r.state.slots) w.putVector(s);
  }
  return writeFramed(kOptimizerStateMagic, 1, w.data());
}

Result<OptimizerState> OptimizerState::decode(std::string_view frame, const std::string& what) {
  DDP_ASSIGN_OR_RETURN(std::string payload, readFramed(frame, kOptimizerStateMagic, 1, nullptr, what));
  BinaryReader r(payload, what);
  OptimizerState out;
  uint8_t kind = 0, nesterov = 0;
  DDP_RETURN_IF_ERROR(r.get(&kind));
  if (kind > static_cast<uint8_t>(OptimizerKind::kAdamW)) {
    return dataLoss(what + ": unknown optimizer kind " + std::to_string(kind));
  }
  out.config.kind = static_cast<OptimizerKind>(kind);
  DDP_RETURN_IF_ERROR(r.get(&out.config.lr));
  DDP_RETURN_IF_ERROR(r.get(&out.config.weightDecay));
  DDP_RETURN_IF_ERROR(r.get(&out.config.momentum));
  DDP_RETURN_IF_ERROR(r.get(&out.config.dampening));
  DDP_RETURN_IF_ERROR(r.get(&nesterov));
  out.config.nesterov = nesterov != 0;
  DDP_RETURN_IF_ERROR(r.get(&out.config.beta1));
  DDP_RETURN_IF_ERROR(r.get(&out.config.beta2));
  DDP_RETURN_IF_ERROR(r.get(&out.config.eps));
  uint64_t count = 0;
  DDP_RETURN_IF_ERROR(r.get(&count));
  if (count > r.remaining()) return dataLoss(what + ": parameter count " + std::to_string(count) + " exceeds the data");
  out.params.resize(count);
  for (ParamRecord& rec : out.params) {
    DDP_RETURN_IF_ERROR(r.get(&rec.index));
    DDP_RETURN_IF_ERROR(r.getString(&rec.name));
    DDP_RETURN_IF_ERROR(r.get(&rec.numel));
    DDP_RETURN_IF_ERROR(r.get(&rec.state.step));
    uint32_t slots = 0;
    DDP_RETURN_IF_ERROR(r.get(&slots));
    if (slots > 2) return dataLoss(what + ": parameter " + rec.name + " has " + std::to_string(slots) + " slots");
    rec.state.slots.resize(slots);
    for (auto& s : rec.state.slots) {
      DDP_RETURN_IF_ERROR(r.getVector(&s));
      if (s.size() != rec.numel) {
        return dataLoss(what + ": parameter " + rec.name + " slot has " + std::to_string(s.size()) +
                        " elements, expected " + std::to_string(rec.numel));
      }
    }
  }
  if (!r.atEnd()) return dataLoss(what + ": " + std::to_string(r.remaining()) + " trailing bytes");
  std::sort(out.params.begin(), out.params.end(),
            [](const ParamRecord& a, const ParamRecord& b) { return a.index < b.index; });
  return out;
}

Result<OptimizerState> OptimizerState::merge(std::vector<OptimizerState> shards) {
  if (shards.empty()) return invalidArgument("OptimizerState::merge: no shards");
  OptimizerState out;
  out.config = shards.front().config;
  for (auto& s : shards) {
    if (s.config.kind != out.config.kind) {
      return invalidArgument(std::string("OptimizerState::merge: shards mix ") +
                             optimizerKindName(out.config.kind) + " and " + optimizerKindName(s.config.kind));
    }
    for (auto& rec : s.params) out.params.push_back(std::move(rec));
  }
  std::sort(out.params.begin(), out.params.end(),
            [](const ParamRecord& a, const ParamRecord& b) { return a.index < b.index; });
  for (size_t i = 1; i < out.params.size(); ++i) {
    if (out.params[i].index == out.params[i - 1].index) {
      return invalidArgument("OptimizerState::merge: parameter index " + std::to_string(out.params[i].index) +
                             " appears in two shards");
    }
  }
  return out;
}

}  // namespace ddp::optim
