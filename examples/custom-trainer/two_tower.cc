#include "two_tower.h"

#include <string>

namespace two_tower {

using ddp::kernels::Activation;
using ddp::model::ActivationLayer;
using ddp::model::Linear;

TwoTower::TwoTower(std::unique_ptr<ddp::kernels::LayerOps> ops, int64_t viewFeatures, int64_t towerWidth,
                   int classes)
    : Module(std::move(ops)), viewFeatures_(viewFeatures), towerWidth_(towerWidth), classes_(classes) {
  ddp::kernels::LayerOps* o = &this->ops();
  for (int t = 0; t < 2; ++t) {
    tower_[t] = std::make_unique<Linear>(o, ddp::model::Shape{viewFeatures}, towerWidth, "tower" + std::to_string(t));
    relu_[t] = std::make_unique<ActivationLayer>(o, ddp::model::Shape{towerWidth}, Activation::kRelu);
    for (ddp::Parameter* p : tower_[t]->parameters()) params_.push_back(p);
  }
  head_ = std::make_unique<Linear>(o, ddp::model::Shape{2 * towerWidth}, classes, "head");
  for (ddp::Parameter* p : head_->parameters()) params_.push_back(p);
  for (ddp::kernels::DeviceBuffer* b : {&views_, &pre_, &towers_, &joined_, &logits_, &dJoined_, &dTowers_, &dPre_}) {
    b->setOps(o);
  }
}

void TwoTower::initialize(uint64_t seed) {
  // Each layer draws its parameters (model indices offset, offset + 1) the engine's way.
  tower_[0]->initialize(seed, 0);
  tower_[1]->initialize(seed, 2);
  head_->initialize(seed, 4);
}

std::string TwoTower::describe() const {
  return "TwoTower(2 x [" + std::to_string(viewFeatures_) + " -> " + std::to_string(towerWidth_) + ", relu] -> " +
         std::to_string(classes_) + ")";
}

void TwoTower::reserve(int batch) {
  if (batch <= reserved_) return;
  const size_t b = static_cast<size_t>(batch), f = sizeof(float);
  views_.reserve(2 * b * viewFeatures_ * f, "views");
  pre_.reserve(2 * b * towerWidth_ * f, "tower pre-activations");
  towers_.reserve(2 * b * towerWidth_ * f, "tower outputs");
  joined_.reserve(2 * b * towerWidth_ * f, "joined towers");
  logits_.reserve(b * classes_ * f, "logits");
  dJoined_.reserve(2 * b * towerWidth_ * f, "joined gradient");
  dTowers_.reserve(2 * b * towerWidth_ * f, "tower gradient");
  dPre_.reserve(2 * b * towerWidth_ * f, "tower pre-activation gradient");
  reserved_ = batch;
}

const float* TwoTower::forward(const float* input, int batch) {
  reserve(batch);
  input_ = input;
  batch_ = batch;
  const int64_t viewSize = static_cast<int64_t>(batch) * viewFeatures_;
  const int64_t towerSize = static_cast<int64_t>(batch) * towerWidth_;
  ops().swapLeadingDims(input, batch, 2, viewFeatures_, views_.f32());  // [B, 2, D] -> [2, B, D]
  for (int t = 0; t < 2; ++t) {
    tower_[t]->forward(views_.f32() + t * viewSize, pre_.f32() + t * towerSize, batch);
    relu_[t]->forward(pre_.f32() + t * towerSize, towers_.f32() + t * towerSize, batch);
  }
  ops().swapLeadingDims(towers_.f32(), 2, batch, towerWidth_, joined_.f32());  // [2, B, H] -> [B, 2H]
  head_->forward(joined_.f32(), logits_.f32(), batch);
  return logits_.f32();
}

void TwoTower::backward(const float* gradOutput, const ddp::GradReadyFn& ready) {
  const int64_t viewSize = static_cast<int64_t>(batch_) * viewFeatures_;
  const int64_t towerSize = static_cast<int64_t>(batch_) * towerWidth_;
  // The head's parameters are the last (indices 4, 5), then tower 1's (2, 3), then tower 0's:
  // strictly descending, as the engine's reducer needs.
  head_->backward(joined_.f32(), logits_.f32(), gradOutput, dJoined_.f32(), batch_, ready, 4);
  ops().swapLeadingDims(dJoined_.f32(), batch_, 2, towerWidth_, dTowers_.f32());  // [B, 2H] -> [2, B, H]
  for (int t = 1; t >= 0; --t) {
    relu_[t]->backward(pre_.f32() + t * towerSize, towers_.f32() + t * towerSize, dTowers_.f32() + t * towerSize,
                       dPre_.f32() + t * towerSize, batch_, ready, 0);
    tower_[t]->backward(views_.f32() + t * viewSize, pre_.f32() + t * towerSize, dPre_.f32() + t * towerSize,
                        nullptr, batch_, ready, static_cast<size_t>(2 * t));
  }
}

}  // namespace two_tower
