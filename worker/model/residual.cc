#include "worker/model/residual.h"

namespace ddp::model {

Residual::Residual(kernels::LayerOps* ops, const Shape& in, std::vector<std::unique_ptr<Layer>> layers)
    : Layer(ops, in), layers_(std::move(layers)) {
  outputShape_ = in;
  for (auto& l : layers_) {
    paramOffset_.push_back(params_.size());
    for (Parameter* p : l->parameters()) params_.push_back(p);
    acts_.emplace_back(ops);
    grads_.emplace_back(ops);
  }
}

std::string Residual::describe() const {
  std::string out = "Residual(";
  for (size_t i = 0; i < layers_.size(); ++i) out += (i ? ", " : "") + layers_[i]->describe();
  return out + ")";
}

void Residual::initialize(uint64_t seed, size_t offset) {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->initialize(seed, offset + paramOffset_[i]);
}

void Residual::setTraining(bool training, uint64_t seed) {
  for (auto& l : layers_) l->setTraining(training, seed);
}

void Residual::reserve(int batch) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    acts_[i].reserve(static_cast<size_t>(batch) * shapeNumel(layers_[i]->outputShape()) * sizeof(float));
    layers_[i]->reserve(batch);
  }
}

void Residual::reserveBackward(int batch) { reserveStackBackward(layers_, grads_, batch); }

int64_t Residual::sampleFloats() const {
  const int64_t inner = stackSampleFloats(layers_);
  if (inner == 0 && !layers_.empty()) return 0;  // a layer that must run whole
  return inner + shapeNumel(outputShape_);
}

void Residual::forward(const float* x, float* y, int batch) {
  reserve(batch);
  const float* in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(in, acts_[i].f32(), batch);
    in = acts_[i].f32();
  }
  const size_t n = static_cast<size_t>(batch) * shapeNumel(inputShape_);
  ops_->copyOnDevice(y, x, n * sizeof(float));
  ops_->addInPlace(y, in, n);
}

void Residual::backward(const float* x, const float* /*y*/, const float* dy, float* dx, int batch,
                        const GradReadyFn& ready, size_t offset) {
  reserveBackward(batch);
  const float* d = dy;  // the block's output gradient is the whole output's
  for (size_t i = layers_.size(); i-- > 0;) {
    // Layer 0 writes the block's input gradient (none when the caller needs none).
    float* di = i > 0 ? grads_[i].f32() : dx;
    layers_[i]->backward(i == 0 ? x : acts_[i - 1].f32(), acts_[i].f32(), d, di, batch, ready,
                         offset + paramOffset_[i]);
    d = di;
  }
  if (dx != nullptr) ops_->addInPlace(dx, dy, static_cast<size_t>(batch) * shapeNumel(inputShape_));
}

}  // namespace ddp::model
