#include "worker/model/layer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/split_mix_rng.h"

namespace ddp::model {

int64_t shapeNumel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shapeString(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

kernels::ConvGeometry poolGeometry(const Shape& in, int batch, int kernel, int stride) {
  kernels::ConvGeometry g;
  g.batch = batch;
  g.channels = static_cast<int>(in.at(0));
  g.height = static_cast<int>(in.at(1));
  g.width = static_cast<int>(in.at(2));
  g.kernelH = g.kernelW = kernel;
  g.stride = stride;
  g.pad = 0;
  return g;
}

void Layer::initialize(uint64_t seed, size_t offset) {
  std::vector<Parameter*> ps = parameters();
  const float bound = 1.f / std::sqrt(static_cast<float>(std::max<int64_t>(1, fanIn())));
  std::vector<float> host;
  for (size_t j = 0; j < ps.size(); ++j) {
    SplitMixRng rng(SplitMixRng::mix(seed, offset + j));
    host.resize(ps[j]->numel());
    for (float& v : host) v = rng.uniform(-bound, bound);
    ops_->copyToDevice(ps[j]->data, host.data(), host.size() * sizeof(float));
  }
}

void ParamStorage::allocate(kernels::LayerOps* ops, std::string name, Shape shape) {
  param.name = std::move(name);
  param.shape = std::move(shape);
  param.dtype = DType::kF32;
  param.device = ops->device();
  data.setOps(ops);
  grad.setOps(ops);
  data.reserve(param.bytes(), param.name.c_str());
  grad.reserve(param.bytes(), (param.name + ".grad").c_str());
  ops->fillZero(data.data(), param.bytes());
  ops->fillZero(grad.data(), param.bytes());
  param.data = data.data();
  param.grad = grad.data();
}

int64_t stackSampleFloats(const std::vector<std::unique_ptr<Layer>>& layers) {
  int64_t floats = 0;
  for (const auto& l : layers) {
    const int64_t f = l->sampleFloats();
    if (f == 0) return 0;
    floats += f;
  }
  return floats;
}

void reserveStackBackward(const std::vector<std::unique_ptr<Layer>>& layers, std::vector<kernels::DeviceBuffer>& grads,
                          int batch) {
  for (size_t i = 1; i < layers.size(); ++i) {
    grads[i].reserve(static_cast<size_t>(batch) * shapeNumel(layers[i]->inputShape()) * sizeof(float));
  }
  for (const auto& l : layers) l->reserveBackward(batch);
}

}  // namespace ddp::model
