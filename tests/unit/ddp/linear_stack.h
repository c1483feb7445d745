#pragma once
// LinearStack: a tiny least-squares model for reducer tests whose gradient has a closed form.
// K independent linear layers y_k = W_k x[0:in_k] + b_k, loss = sum_k mean_i 0.5 |y_k,i - t_k,i|^2.
// Parameters are W0, b0, W1, b1, ... (f32 or f64 per layer). backward() ACCUMULATES into
// Parameter::grad (the model contract) and calls ready(i) in descending i, like a real model.
// Batches are drawn from a seeded generator by (step, global row), so rank r's rows
// [r*B, (r+1)*B) of the concatenated batch are the same rows a single process would see.
// Thread model: one thread per instance.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "worker/core/parameter.h"

namespace ddp::testing {

struct LayerSpec {
  int in = 4;
  int out = 3;
  DType dtype = DType::kF32;
};

inline double hashUnit(uint64_t a, uint64_t b, uint64_t c) {  // deterministic value in [-1, 1)
  uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^ c * 0x94d049bb133111ebull;
  h ^= h >> 31;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 29;
  return static_cast<double>(h >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

class LinearStack {
 public:
  explicit LinearStack(std::vector<LayerSpec> layers, uint64_t initSeed = 1) : layers_(std::move(layers)) {
    for (size_t k = 0; k < layers_.size(); ++k) {
      const auto& l = layers_[k];
      addParam("layer" + std::to_string(k) + ".weight", {l.out, l.in}, l.dtype, initSeed, 2 * k);
      addParam("layer" + std::to_string(k) + ".bias", {l.out}, l.dtype, initSeed, 2 * k + 1);
    }
    for (size_t i = 0; i < store_.size(); ++i) {
      params_[i].data = store_[i].data.data();
      params_[i].grad = store_[i].grad.data();
    }
  }
  LinearStack(const LinearStack&) = delete;

  std::vector<Parameter*> parameters() {
    std::vector<Parameter*> out;
    for (auto& p : params_) out.push_back(&p);
    return out;
  }
  int maxIn() const {
    int m = 0;
    for (const auto& l : layers_) m = std::max(m, l.in);
    return m;
  }

  // Value of element j of parameter i (data or grad) as double.
  static double get(const Parameter& p, const void* base, size_t j) {
    return p.dtype == DType::kF64 ? static_cast<const double*>(base)[j] : static_cast<const float*>(base)[j];
  }
  static void set(const Parameter& p, void* base, size_t j, double v) {
    if (p.dtype == DType::kF64) static_cast<double*>(base)[j] = v;
    else static_cast<float*>(base)[j] = static_cast<float>(v);
  }
  std::vector<double> grad(size_t i) const {
    std::vector<double> g(params_[i].numel());
    for (size_t j = 0; j < g.size(); ++j) g[j] = get(params_[i], params_[i].grad, j);
    return g;
  }
  void zeroGrad() {
    for (auto& p : params_) {
      for (size_t j = 0; j < p.numel(); ++j) set(p, p.grad, j, 0.0);
    }
  }

  // Accumulates the gradient of the mean loss over global rows [row0, row0 + rows) of `step`'s
  // batch. Layers in `skip` get no gradient and no ready call (unused layers).
  // `betweenLayers(k)` runs after layer k's parameters were marked ready.
  void backward(uint64_t step, int row0, int rows, const GradReadyFn& ready, const std::vector<int>& skip = {},
                const std::function<void(int)>& betweenLayers = {}) {
    const int d = maxIn();
    std::vector<double> x(d);
    for (int k = static_cast<int>(layers_.size()) - 1; k >= 0; --k) {
      if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
      const auto& l = layers_[k];
      Parameter& w = params_[2 * k];
      Parameter& b = params_[2 * k + 1];
      std::vector<double> gw(static_cast<size_t>(l.out) * l.in, 0.0), gb(l.out, 0.0);
      for (int r = row0; r < row0 + rows; ++r) {
        for (int j = 0; j < d; ++j) x[j] = hashUnit(step, static_cast<uint64_t>(r), static_cast<uint64_t>(j));
        for (int o = 0; o < l.out; ++o) {
          double y = get(b, b.data, o);
          for (int j = 0; j < l.in; ++j) y += get(w, w.data, static_cast<size_t>(o) * l.in + j) * x[j];
          const double t = hashUnit(step + 1000, static_cast<uint64_t>(r), static_cast<uint64_t>(k * 97 + o));
          const double res = (y - t) / rows;
          gb[o] += res;
          for (int j = 0; j < l.in; ++j) gw[static_cast<size_t>(o) * l.in + j] += res * x[j];
        }
      }
      for (size_t j = 0; j < gb.size(); ++j) set(b, b.grad, j, get(b, b.grad, j) + gb[j]);
      if (ready) ready(2 * k + 1);
      for (size_t j = 0; j < gw.size(); ++j) set(w, w.grad, j, get(w, w.grad, j) + gw[j]);
      if (ready) ready(2 * k);
      if (betweenLayers) betweenLayers(k);
    }
  }

 private:
  struct Storage {
    std::vector<double> data;  // oversized for either dtype (8 bytes per element)
    std::vector<double> grad;
  };
  void addParam(std::string name, std::vector<int64_t> shape, DType dtype, uint64_t seed, uint64_t idx) {
    Parameter p;
    p.name = std::move(name);
    p.shape = std::move(shape);
    p.dtype = dtype;
    Storage s;
    s.data.assign(p.numel(), 0.0);
    s.grad.assign(p.numel(), 0.0);
    store_.push_back(std::move(s));
    params_.push_back(p);
    Parameter& q = params_.back();
    for (size_t j = 0; j < q.numel(); ++j) set(q, store_.back().data.data(), j, 0.5 * hashUnit(seed, idx, j));
  }

  std::vector<LayerSpec> layers_;
  std::vector<Storage> store_;
  std::vector<Parameter> params_;
};

}  // namespace ddp::testing
