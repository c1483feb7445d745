#include "tests/support/float_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace ddp::test {

FloatParams::FloatParams(const std::vector<size_t>& sizes, const InitFn& init)
    : data(sizes.size()), grad(sizes.size()), params(sizes.size()) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    data[i].resize(sizes[i]);
    grad[i].assign(sizes[i], 0.f);
    for (size_t k = 0; k < sizes[i]; ++k) data[i][k] = init(i, k);
    params[i].name = "p" + std::to_string(i);
    params[i].shape = {static_cast<int64_t>(sizes[i])};
    params[i].data = data[i].data();
    params[i].grad = grad[i].data();
  }
}

std::vector<Parameter*> FloatParams::ptrs() {
  std::vector<Parameter*> out;
  for (auto& p : params) out.push_back(&p);
  return out;
}

void expectAllNear(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                   float relTol, const std::string& what) {
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t k = 0; k < got[i].size(); ++k)
      ASSERT_NEAR(got[i][k], want[i][k], relTol * (1.f + std::fabs(want[i][k])))
          << what << " param " << i << "[" << k << "]";
}

}  // namespace ddp::test
