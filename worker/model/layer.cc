#include "worker/model/layer.h"

#include <sstream>

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

}  // namespace ddp::model
