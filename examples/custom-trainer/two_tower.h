#pragma once
// TwoTower: a model a job's YAML cannot declare. Each sample holds two views of D features
// (sample shape {2, D}); each view goes through a tower of its own (Linear D -> H, ReLU), the
// two towers' outputs are concatenated, and a head (Linear 2H -> classes) gives the logits.
// Parameters, in order: tower0.{weight,bias}, tower1.{weight,bias}, head.{weight,bias}.
// Runs on the LayerOps it is given (CPU or CUDA): the views are split and the towers joined by
// swapping the batch and view dimensions (LayerOps::swapLeadingDims), not by host copies.
// Thread model: one training thread (the engine's).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ddp/worker/model/activation_layer.h>
#include <ddp/worker/model/linear.h>
#include <ddp/worker/model/module.h>

namespace two_tower {

class TwoTower final : public ddp::model::Module {
 public:
  TwoTower(std::unique_ptr<ddp::kernels::LayerOps> ops, int64_t viewFeatures, int64_t towerWidth, int classes);

  // Every parameter drawn from U(-1/sqrt(fanIn), 1/sqrt(fanIn)) by a generator seeded from
  // (seed, parameter index) (Layer::initialize): the same seed gives the same model on every rank.
  void initialize(uint64_t seed);

  std::string describe() const override;
  std::vector<ddp::Parameter*> parameters() override { return params_; }
  ddp::model::Shape inputShape() const override { return {2, viewFeatures_}; }
  int64_t outputFeatures() const override { return classes_; }
  const float* forward(const float* input, int batch) override;
  void backward(const float* gradOutput, const ddp::GradReadyFn& ready) override;
  void reserve(int batch) override;

 private:
  int64_t viewFeatures_, towerWidth_;
  int classes_;
  std::unique_ptr<ddp::model::Linear> tower_[2];
  std::unique_ptr<ddp::model::ActivationLayer> relu_[2];
  std::unique_ptr<ddp::model::Linear> head_;
  std::vector<ddp::Parameter*> params_;
  // Activations: views [2, B, D], tower pre-activations [2, B, H], tower outputs [2, B, H],
  // joined [B, 2H], logits [B, C]; gradients of the joined input and of each tower's parts.
  ddp::kernels::DeviceBuffer views_, pre_, towers_, joined_, logits_, dJoined_, dTowers_, dPre_;
  const float* input_ = nullptr;
  int batch_ = 0;
  int reserved_ = 0;
};

}  // namespace two_tower
