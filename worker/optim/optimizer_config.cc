#include "worker/optim/optimizer_config.h"

namespace ddp::optim {

const char* optimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "unknown";
}

bool parseOptimizerKind(const std::string& name, OptimizerKind* out) {
  if (name == "sgd") *out = OptimizerKind::kSgd;
  else if (name == "adam") *out = OptimizerKind::kAdam;
  else if (name == "adamw") *out = OptimizerKind::kAdamW;
  else return false;
  return true;
}

OptimizerConfig OptimizerConfig::sgd(float lr, float momentum, float dampening, float weightDecay,
                                     bool nesterov) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kSgd;
  c.lr = lr;
  c.momentum = momentum;
  c.dampening = dampening;
  c.weightDecay = weightDecay;
  c.nesterov = nesterov;
  return c;
}

OptimizerConfig OptimizerConfig::adam(float lr, float beta1, float beta2, float eps, float weightDecay) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdam;
  c.lr = lr;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.eps = eps;
  c.weightDecay = weightDecay;
  return c;
}

OptimizerConfig OptimizerConfig::adamw(float lr, float beta1, float beta2, float eps, float weightDecay) {
  OptimizerConfig c = adam(lr, beta1, beta2, eps, weightDecay);
  c.kind = OptimizerKind::kAdamW;
  return c;
}

Status OptimizerConfig::validate() const {
  const std::string who = std::string("optimizer ") + optimizerKindName(kind) + ": ";
  if (!(lr >= 0.f)) return invalidArgument(who + "lr must be >= 0, got " + std::to_string(lr));
  if (!(weightDecay >= 0.f)) return invalidArgument(who + "weightDecay must be >= 0");
  if (kind == OptimizerKind::kSgd) {
    if (!(momentum >= 0.f)) return invalidArgument(who + "momentum must be >= 0");
    if (nesterov && (momentum <= 0.f || dampening != 0.f)) {
      return invalidArgument(who + "nesterov needs momentum > 0 and dampening == 0");
    }
  } else {
    if (!(beta1 >= 0.f && beta1 < 1.f)) return invalidArgument(who + "beta1 must be in [0, 1)");
    if (!(beta2 >= 0.f && beta2 < 1.f)) return invalidArgument(who + "beta2 must be in [0, 1)");
    if (!(eps >= 0.f)) return invalidArgument(who + "eps must be >= 0");
  }
  return Status::ok();
}

int OptimizerConfig::slotsPerElement() const {
  if (kind == OptimizerKind::kSgd) return momentum != 0.f ? 1 : 0;
  return 2;
}

kernels::AdamHyper OptimizerConfig::adamHyper() const {
  kernels::AdamHyper h;
  h.lr = lr;
  h.beta1 = beta1;
  h.beta2 = beta2;
  h.eps = eps;
  h.weightDecay = weightDecay;
  h.decoupled = kind == OptimizerKind::kAdamW;
  return h;
}

kernels::SgdHyper OptimizerConfig::sgdHyper() const {
  kernels::SgdHyper h;
  h.lr = lr;
  h.momentum = momentum;
  h.dampening = dampening;
  h.weightDecay = weightDecay;
  h.nesterov = nesterov;
  return h;
}

}  // namespace ddp::optim
