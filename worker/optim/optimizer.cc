#include "worker/optim/optimizer.h"

#include <cstring>

#include "kernels/bucket_ops.h"
#include "worker/optim/adam.h"
#include "worker/optim/sgd.h"

namespace ddp::optim {

#if DDP_WITH_CUDA
// In optimizer_cuda.cc: cudaSetDevice with the error as a Status.
Status setCudaDevice(int index);
#endif

namespace {

kernels::FlatView f32View(void* data, size_t n, Device device) { return {data, n, DType::kF32, device}; }

}  // namespace

Optimizer::Optimizer(std::vector<Parameter*> params, OptimizerConfig config)
    : config_(config),
      params_(std::move(params)),
      device_(params_.empty() ? Device::cpu() : params_.front()->device),
      states_(params_.size()),
      deviceSlots_(device_.isCuda() ? params_.size() : 0) {}

Status Optimizer::step(float gradScale) {
  std::vector<size_t> idx;
  idx.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) idx.push_back(i);
  return stepParameters(idx, gradScale);
}

Status Optimizer::ensureSlots(size_t i) {
  const size_t slots = static_cast<size_t>(config_.slotsPerElement());
  const size_t n = params_[i]->numel();
  if (!onCuda()) {
    ParamState& s = states_[i];
    if (s.slots.size() != slots) s.slots.assign(slots, std::vector<float>(n, 0.f));
    return Status::ok();
  }
  std::vector<kernels::FlatBuffer>& d = deviceSlots_[i];
  if (d.size() == slots) return Status::ok();
  std::vector<kernels::FlatBuffer> fresh;
  for (size_t k = 0; k < slots; ++k) {
    auto buf = kernels::FlatBuffer::allocate(n, DType::kF32, device_);
    if (!buf.isOk()) return buf.status().withContext(name() + ": state of " + params_[i]->name);
    fresh.push_back(std::move(*buf));
  }
  d = std::move(fresh);
  return Status::ok();
}

float* Optimizer::slot(size_t i, size_t k) {
  if (onCuda()) return static_cast<float*>(deviceSlots_[i][k].data());
  return states_[i].slots[k].data();
}

Status Optimizer::stepParameters(std::span<const size_t> indices, float gradScale) {
  std::vector<size_t> todo;
  todo.reserve(indices.size());
  for (size_t i : indices) {
    if (i >= params_.size()) {
      return outOfRange(name() + ": parameter index " + std::to_string(i) + " of " +
                        std::to_string(params_.size()));
    }
    if (params_[i]->grad == nullptr) continue;
    DDP_RETURN_IF_ERROR(ensureSlots(i));
    todo.push_back(i);
  }
  if (todo.empty()) return Status::ok();
#if DDP_WITH_CUDA
  // The update may run on another thread than the one that allocated (the reducer's callback).
  if (onCuda()) DDP_RETURN_IF_ERROR(setCudaDevice(device_.index).withContext(name() + " step"));
#endif
  if (decayMask_.empty() || config_.weightDecay == 0.f) {
    DDP_RETURN_IF_ERROR(applyUpdate(todo, gradScale).withContext(name() + " step on " + device_.toString()));
  } else {
    // Two groups: the masked-out parameters step with weight decay 0.
    std::vector<size_t> decayed, plain;
    for (size_t i : todo) (i < decayMask_.size() && decayMask_[i] ? decayed : plain).push_back(i);
    if (!decayed.empty()) {
      DDP_RETURN_IF_ERROR(applyUpdate(decayed, gradScale).withContext(name() + " step on " + device_.toString()));
    }
    if (!plain.empty()) {
      const float decay = config_.weightDecay;
      config_.weightDecay = 0.f;
      Status st = applyUpdate(plain, gradScale);
      config_.weightDecay = decay;
      DDP_RETURN_IF_ERROR(st.withContext(name() + " step on " + device_.toString()));
    }
  }
  for (size_t i : todo) ++states_[i].step;
  return Status::ok();
}

const ParamState& Optimizer::state(size_t i) const {
  DDP_CHECK(!onCuda());  // CUDA state lives on the device: hostParamState()
  return states_[i];
}

Result<ParamState> Optimizer::hostParamState(size_t i) const {
  if (i >= params_.size()) return outOfRange(name() + ": state index " + std::to_string(i));
  if (!onCuda()) return states_[i];
  ParamState out;
  out.step = states_[i].step;
  const size_t n = params_[i]->numel();
  for (const kernels::FlatBuffer& b : deviceSlots_[i]) {
    std::vector<float> host(n);
    DDP_RETURN_IF_ERROR(kernels::copyFlat(f32View(host.data(), n, Device::cpu()), b.view())
                            .withContext(name() + ": copying the state of " + params_[i]->name + " to the host"));
    out.slots.push_back(std::move(host));
  }
  return out;
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
  if (!onCuda()) {
    states_[i] = std::move(state);
    return Status::ok();
  }
  std::vector<kernels::FlatBuffer> device;
  for (auto& host : state.slots) {
    auto buf = kernels::FlatBuffer::allocate(n, DType::kF32, device_);
    if (!buf.isOk()) return buf.status().withContext(name() + ": state of " + params_[i]->name);
    DDP_RETURN_IF_ERROR(kernels::copyFlat(buf->view(), f32View(host.data(), n, Device::cpu()))
                            .withContext(name() + ": copying the state of " + params_[i]->name + " to " +
                                         device_.toString()));
    device.push_back(std::move(*buf));
  }
  deviceSlots_[i] = std::move(device);
  states_[i] = ParamState{state.step, {}};
  return Status::ok();
}

size_t Optimizer::stateBytes() const {
  size_t b = 0;
  for (const auto& s : states_) {
    for (const auto& v : s.slots) b += v.size() * sizeof(float);
  }
  for (const auto& d : deviceSlots_) {
    for (const auto& buf : d) b += buf.count() * sizeof(float);
  }
  return b;
}

OptimizerState Optimizer::exportState() const {
  DDP_CHECK(!onCuda());  // CUDA state lives on the device: hostState()
  OptimizerState out;
  out.config = config_;
  out.params.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    out.params.push_back({i, params_[i]->name, params_[i]->numel(), states_[i]});
  }
  return out;
}

Result<OptimizerState> Optimizer::hostState() const {
  if (!onCuda()) return exportState();
  OptimizerState out;
  out.config = config_;
  out.params.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    DDP_ASSIGN_OR_RETURN(ParamState s, hostParamState(i));
    out.params.push_back({i, params_[i]->name, params_[i]->numel(), std::move(s)});
  }
  return out;
}

Result<std::string> Optimizer::hostStateDict() const {
  DDP_ASSIGN_OR_RETURN(OptimizerState st, hostState());
  return st.encode();
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
  // Every record is checked against this optimizer's config; on any failure the previous state
  // (host and device) is kept.
  auto savedStates = std::move(states_);
  auto savedDevice = std::move(deviceSlots_);
  states_.assign(params_.size(), ParamState{});
  deviceSlots_.clear();
  deviceSlots_.resize(onCuda() ? params_.size() : 0);
  for (size_t k = 0; k < next.size(); ++k) {
    Status s = setState(k, std::move(next[k]));
    if (!s.isOk()) {
      states_ = std::move(savedStates);
      deviceSlots_ = std::move(savedDevice);
      return s;
    }
  }
  config_ = st.config;
  return Status::ok();
}

Status Optimizer::zeroGrad() {
  for (Parameter* p : params_) {
    if (p->grad == nullptr) continue;
    if (!onCuda()) {
      std::memset(p->grad, 0, p->bytes());
      continue;
    }
    DDP_RETURN_IF_ERROR(kernels::fillZero(f32View(p->grad, p->numel(), device_)).withContext(name() + ": zeroGrad"));
  }
  return Status::ok();
}

Result<std::unique_ptr<Optimizer>> makeOptimizer(const OptimizerConfig& config, std::vector<Parameter*> params) {
  DDP_RETURN_IF_ERROR(config.validate());
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter* p = params[i];
    if (p == nullptr) return invalidArgument("optimizer: parameter " + std::to_string(i) + " is null");
    if (p->dtype != DType::kF32) {
      return invalidArgument("optimizer: parameter " + p->name + " is " + dtypeName(p->dtype) + ", only f32 is supported");
    }
    if (!(p->device == params.front()->device)) {
      return invalidArgument("optimizer: parameter " + p->name + " is on " + p->device.toString() + " but " +
                             params.front()->name + " is on " + params.front()->device.toString() +
                             "; one optimizer steps the parameters of one device");
    }
    if (!p->device.isCpu() && !p->device.isCuda()) {
      return unimplemented("optimizer: parameter " + p->name + " is on " + p->device.toString());
    }
#if !DDP_WITH_CUDA
    if (p->device.isCuda()) {
      return unimplemented("optimizer: parameter " + p->name + " is on " + p->device.toString() +
                           " but this build has no CUDA (configure with -DDDP_WITH_CUDA=ON)");
    }
#endif
    if (p->data == nullptr && p->numel() > 0) return invalidArgument("optimizer: parameter " + p->name + " has no data");
  }
  if (config.kind == OptimizerKind::kSgd) return std::unique_ptr<Optimizer>(new Sgd(std::move(params), config));
  return std::unique_ptr<Optimizer>(new Adam(std::move(params), config));
}

}  // namespace ddp::optim
