#include "worker/optim/optimizer.h"

#include <cstring>

#include "worker/optim/adam.h"
#include "worker/optim/sgd.h"

namespace ddp::optim {

Optimizer::Optimizer(std::vector<Parameter*> params, OptimizerConfig config)
    : config_(config), params_(std::move(params)), states_(params_.size()) {}

Status Optimizer::step(float gradScale) {
  std::vector<size_t> idx;
  idx.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) idx.push_back(i);
  return stepParameters(idx, gradScale);
}

Status Optimizer::stepParameters(std::span<const size_t> indices, float gradScale) {
  std::vector<size_t> todo;
  todo.reserve(indices.size());
  const int slots = config_.slotsPerElement();
  for (size_t i : indices) {
    if (i >= params_.size()) {
      return outOfRange(name() + ": parameter index " + std::to_string(i) + " of " +
                        std::to_string(params_.size()));
    }
    if (params_[i]->grad == nullptr) continue;
    ParamState& s = states_[i];
    if (static_cast<int>(s.slots.size()) != slots) s.slots.assign(slots, std::vector<float>(params_[i]->numel(), 0.f));
    todo.push_back(i);
  }
  if (!todo.empty()) applyUpdate(todo, gradScale);
  for (size_t i : todo) ++states_[i].step;
  return Status::ok();
}

Status Optimizer::setState(size_t i, ParamState state) {
  if (i >= params_.size()) return outOfRange(name() + ": setState index " + std::to_string(i));
  const size_t n = params_[i]->numel();
  const bool fresh = state.step == 0 && state.slots.empty();
  if (!fresh && static_cast<int>(state.slots.size()) != config_.slotsPerElement()) {
    return invalidArgument(name() + ": state of " + params_[i]->name + " has " +
                           std::to_string(state.slots.size()) + " slots, expected " +
                           std::to_string(config_.slotsPerElement()));
  }
  for (const auto& s : state.slots) {
    if (s.size() != n) {
      return invalidArgument(name() + ": state of " + params_[i]->name + " has " + std::to_string(s.size()) +
                             " elements, parameter has " + std::to_string(n));
    }
  }
  states_[i] = std::move(state);
  return Status::ok();
}

size_t Optimizer::stateBytes() const {
  size_t b = 0;
  for (const auto& s : states_) {
    for (const auto& v : s.slots) b += v.size() * sizeof(float);
  }
  return b;
}

OptimizerState Optimizer::exportState() const {
  OptimizerState out;
  out.config = config_;
  out.params.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    out.params.push_back({i, params_[i]->name, params_[i]->numel(), states_[i]});
  }
  return out;
}

Status Optimizer::loadStateDict(std::string_view frame) {
  DDP_ASSIGN_OR_RETURN(OptimizerState st, OptimizerState::decode(frame, name() + " state dict"));
  return importState(st);
}

Status Optimizer::importState(const OptimizerState& st) {
  if (st.config.kind != config_.kind) {
    return invalidArgument(std::string("loading a ") + optimizerKindName(st.config.kind) +
                           " state into a " + name() + " optimizer");
  }
  if (st.params.size() != params_.size()) {
    return invalidArgument(name() + ": state has " + std::to_string(st.params.size()) +
                           " parameters, optimizer has " + std::to_string(params_.size()));
  }
  DDP_RETURN_IF_ERROR(st.config.validate());
  std::vector<ParamState> next(params_.size());
  for (size_t k = 0; k < st.params.size(); ++k) {
    const ParamRecord& r = st.params[k];
    if (r.index != k || r.numel != params_[k]->numel()) {
      return invalidArgument(name() + ": state record " + std::to_string(k) + " (index " +
                             std::to_string(r.index) + ", " + std::to_string(r.numel) +
                             " elements) does not match parameter " + params_[k]->name + " (" +
                             std::to_string(params_[k]->numel()) + " elements)");
    }
    next[k] = r.state;
  }
  auto saved = std::move(states_);
  states_.assign(params_.size(), ParamState{});
  for (size_t k = 0; k < next.size(); ++k) {
    Status s = setState(k, std::move(next[k]));
    if (!s.isOk()) {
      states_ = std::move(saved);
      return s;
    }
  }
  config_ = st.config;
  return Status::ok();
}

void Optimizer::zeroGrad() {
  for (Parameter* p : params_) {
    if (p->grad) std::memset(p->grad, 0, p->bytes());
  }
}

Result<std::unique_ptr<Optimizer>> makeOptimizer(const OptimizerConfig& config, std::vector<Parameter*> params) {
  DDP_RETURN_IF_ERROR(config.validate());
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter* p = params[i];
    if (p == nullptr) return invalidArgument("optimizer: parameter " + std::to_string(i) + " is null");
    if (p->dtype != DType::kF32) {
      return invalidArgument("optimizer: parameter " + p->name + " is " + dtypeName(p->dtype) + ", only f32 is supported");
    }
    if (!p->device.isCpu()) {
      return unimplemented("optimizer: parameter " + p->name + " is on " + p->device.toString() +
                           "; device-resident optimizer state is not built (CPU parameters only)");
    }
    if (p->data == nullptr && p->numel() > 0) return invalidArgument("optimizer: parameter " + p->name + " has no data");
  }
  if (config.kind == OptimizerKind::kSgd) return std::unique_ptr<Optimizer>(new Sgd(std::move(params), config));
  return std::unique_ptr<Optimizer>(new Adam(std::move(params), config));
}

}  // namespace ddp::optim
