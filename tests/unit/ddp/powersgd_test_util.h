#pragma once
// Test helpers for the PowerSGD hooks: buckets built by hand (standing in for the Reducer) and a
// step driver that calls the hook the way Note [Hook ordering] says the reducer does.

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "worker/ddp/comm_hook.h"
#include "worker/ddp/powersgd_state.h"

namespace ddp::testing_util {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// One bucket: its own flat buffer with the tensors back to back, Parameters carrying names and
// shapes, and the GradBucket over them.
class TestBucket {
 public:
  TestBucket(size_t index, bool isLast, std::vector<TensorSpec> specs) : index_(index), isLast_(isLast) {
    size_t total = 0;
    for (auto& s : specs) {
      Parameter p;
      p.name = s.name;
      p.shape = s.shape;
      offsets_.push_back(total);
      total += p.numel();
      params_.push_back(p);
    }
    buffer_.assign(total, 0.0f);
    std::string sig;
    for (auto& p : params_) {
      sig += p.name + "[";
      for (auto d : p.shape) sig += std::to_string(d) + ",";
      sig += "]";
    }
    identity_ = stableHash(sig);
  }

  std::vector<float>& buffer() { return buffer_; }
  const std::vector<Parameter>& params() const { return params_; }
  size_t offset(size_t i) const { return offsets_[i]; }

  GradBucket gradBucket() {
    std::vector<comm::BufferView> views;
    std::vector<Parameter*> ptrs;
    for (size_t i = 0; i < params_.size(); ++i) {
      views.push_back(comm::viewOf(buffer_.data() + offsets_[i], params_[i].numel()));
      ptrs.push_back(&params_[i]);
    }
    return GradBucket(index_, isLast_, comm::viewOf(buffer_.data(), buffer_.size()), views, ptrs, identity_);
  }

 private:
  size_t index_;
  bool isLast_;
  std::vector<Parameter> params_;
  std::vector<size_t> offsets_;
  std::vector<float> buffer_;
  uint64_t identity_ = 0;
};

// Runs one step: run() on every bucket in order (so several are in flight), then waits each
// bucket's work and calls its finish() in bucket order.
inline Status runStep(CommHook& hook, std::vector<TestBucket*> buckets) {
  std::vector<GradBucket> grads;
  grads.reserve(buckets.size());
  for (auto* b : buckets) grads.push_back(b->gradBucket());
  std::vector<HookResult> results;
  for (auto& g : grads) {
    auto r = hook.run(g);
    if (!r.isOk()) return r.status();
    results.push_back(std::move(r).value());
  }
  for (auto& r : results) {
    if (r.work) DDP_RETURN_IF_ERROR(r.work->wait());
    if (r.finish) DDP_RETURN_IF_ERROR(r.finish());
  }
  return Status::ok();
}

// Runs each bucket to completion before starting the next (nothing overlaps).
inline Status runStepSequential(CommHook& hook, std::vector<TestBucket*> buckets) {
  for (auto* b : buckets) DDP_RETURN_IF_ERROR(runStep(hook, {b}));
  return Status::ok();
}

inline std::vector<float> randomVector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Row-major a (n x k) times b^T (b is m x k): an n x m matrix of rank <= k.
inline std::vector<float> lowRank(const std::vector<float>& a, const std::vector<float>& b, size_t n, size_t m,
                                  size_t k) {
  std::vector<float> out(n * m, 0.f);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < m; ++j) {
      double s = 0;
      for (size_t l = 0; l < k; ++l) s += static_cast<double>(a[i * k + l]) * b[j * k + l];
      out[i * m + j] = static_cast<float>(s);
    }
  return out;
}

inline double maxAbsDiff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  return m;
}

inline double norm(const float* a, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * a[i];
  return std::sqrt(s);
}

}  // namespace ddp::testing_util
