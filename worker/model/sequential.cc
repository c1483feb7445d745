#include "worker/model/sequential.h"

#include <sstream>

#include "worker/model/activation_layer.h"
#include "worker/model/conv2d.h"
#include "worker/model/linear.h"
#include "worker/model/max_pool2d.h"

namespace ddp::model {

Sequential::Sequential(std::unique_ptr<kernels::LayerOps> ops, Shape inputShape)
    : Module(std::move(ops)), inputShape_(std::move(inputShape)) {}

void Sequential::append(std::unique_ptr<Layer> layer) {
  paramOffset_.push_back(params_.size());
  for (Parameter* p : layer->parameters()) params_.push_back(p);
  layers_.push_back(std::move(layer));
  acts_.emplace_back(&ops());
  grads_.emplace_back(&ops());
  reserved_ = 0;  // new buffers need sizing
}

Status Sequential::addLinear(int64_t outFeatures, const std::string& name) {
  if (outFeatures <= 0) return invalidArgument("Linear: outFeatures must be > 0");
  append(std::make_unique<Linear>(&ops(), currentShape(), outFeatures,
                                  name.empty() ? "layers." + std::to_string(layers_.size()) : name));
  return Status::ok();
}

Status Sequential::addActivation(kernels::Activation a) {
  append(std::make_unique<ActivationLayer>(&ops(), currentShape(), a));
  return Status::ok();
}

Status Sequential::addConv2d(int outChannels, int kernel, int stride, int pad,
                             const std::string& name) {
  const Shape& in = currentShape();
  if (in.size() != 3) {
    return invalidArgument("Conv2d needs a {C, H, W} input, got " + shapeString(in));
  }
  if (outChannels <= 0 || kernel <= 0 || stride <= 0 || pad < 0 || in[1] + 2 * pad < kernel ||
      in[2] + 2 * pad < kernel) {
    return invalidArgument("Conv2d: bad geometry (out " + std::to_string(outChannels) +
                           ", kernel " + std::to_string(kernel) + ", stride " +
                           std::to_string(stride) + ", pad " + std::to_string(pad) +
                           ") for input " + shapeString(in));
  }
  append(std::make_unique<Conv2d>(&ops(), in, outChannels, kernel, stride, pad,
                                  name.empty() ? "layers." + std::to_string(layers_.size()) : name));
  return Status::ok();
}

Status Sequential::addMaxPool2d(int kernel, int stride) {
  const Shape& in = currentShape();
  if (in.size() != 3) {
    return invalidArgument("MaxPool2d needs a {C, H, W} input, got " + shapeString(in));
  }
  if (kernel <= 0 || stride < 0 || in[1] < kernel || in[2] < kernel) {
    return invalidArgument("MaxPool2d: bad window " + std::to_string(kernel) + " for input " +
                           shapeString(in));
  }
  append(std::make_unique<MaxPool2d>(&ops(), in, kernel, stride));
  return Status::ok();
}

Status Sequential::addLayer(std::unique_ptr<Layer> layer) {
  if (layer->inputShape() != currentShape()) {
    return invalidArgument(layer->describe() + " takes " + shapeString(layer->inputShape()) + " but the stack gives " +
                           shapeString(currentShape()));
  }
  append(std::move(layer));
  return Status::ok();
}

void Sequential::initialize(uint64_t seed) {
  for (size_t l = 0; l < layers_.size(); ++l) layers_[l]->initialize(seed, paramOffset_[l]);
  zeroGrad();
}

void Sequential::setTraining(bool training, uint64_t seed) {
  for (auto& l : layers_) l->setTraining(training, seed);
}

std::string Sequential::describe() const {
  std::ostringstream os;
  os << "Sequential(input " << shapeString(inputShape_);
  for (const auto& l : layers_) os << ", " << l->describe();
  os << ")";
  return os.str();
}

void Sequential::reserve(int batch) {
  if (batch <= reserved_) return;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const size_t outBytes =
        static_cast<size_t>(batch) * shapeNumel(layers_[i]->outputShape()) * sizeof(float);
    acts_[i].reserve(outBytes);
    layers_[i]->reserve(batch);
  }
  reserved_ = batch;
}

void Sequential::reserveBackward(int batch) { reserveStackBackward(layers_, grads_, batch); }

int64_t Sequential::chunkFloatsPerSample() const { return stackSampleFloats(layers_); }

const float* Sequential::forward(const float* input, int batch) {
  reserve(batch);
  input_ = input;
  batch_ = batch;
  const float* x = input;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(x, acts_[i].f32(), batch);
    x = acts_[i].f32();
  }
  return x;
}

void Sequential::backward(const float* gradOutput, const GradReadyFn& ready) {
  DDP_CHECK(input_ != nullptr);  // backward needs a forward first
  // grads_[i] holds the gradient w.r.t. layer i's input; the model's own input needs none. Sized
  // on the first backward of a batch size (not in reserve): evaluation-only batch sizes never
  // allocate gradient buffers.
  reserveBackward(batch_);
  const float* dy = gradOutput;
  for (size_t i = layers_.size(); i-- > 0;) {
    const float* x = i == 0 ? input_ : acts_[i - 1].f32();
    float* dx = i == 0 ? nullptr : grads_[i].f32();
    layers_[i]->backward(x, acts_[i].f32(), dy, dx, batch_, ready, paramOffset_[i]);
    dy = dx;
  }
}

}  // namespace ddp::model
