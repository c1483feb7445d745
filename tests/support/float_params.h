#pragma once
// FloatParams: a set of f32 CPU Parameters backed by owned vectors, the tiny "model" of the
// optimizer and join tests. Each parameter i is 1-D with sizes[i] elements named "p<i>"; its
// data is init(i, k) and its gradient starts at zero. Tests derive from it to add their own
// gradient formulas.
//
//   struct Model : test::FloatParams {
//     Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::sin(0.3f * (i + 1) + 0.17f * k); }) {}
//   };
//
// Thread model: none; one thread (a rank) owns an instance. Movable (the vectors keep their
// buffers, so the Parameters stay valid) but not copyable: a copy's Parameters would point into
// the original.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "worker/core/parameter.h"

namespace ddp::test {

struct FloatParams {
  using InitFn = std::function<float(size_t param, size_t element)>;

  FloatParams(const std::vector<size_t>& sizes, const InitFn& init);
  FloatParams(const FloatParams&) = delete;
  FloatParams& operator=(const FloatParams&) = delete;
  FloatParams(FloatParams&&) = default;
  FloatParams& operator=(FloatParams&&) = default;

  // Pointers to every Parameter, in order (what optimizers and the reducer take).
  std::vector<Parameter*> ptrs();

  std::vector<std::vector<float>> data, grad;
  std::vector<Parameter> params;
};

// GoogleTest ASSERTs that got[i][k] is within relTol * (1 + |want[i][k]|) of want[i][k] for
// every element (want has got's shape); failures name `what`, the parameter and the element.
// Wrap in ASSERT_NO_FATAL_FAILURE where the caller must stop at the first mismatch.
void expectAllNear(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                   float relTol, const std::string& what = "");

}  // namespace ddp::test
