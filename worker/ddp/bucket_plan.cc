#include "worker/ddp/bucket_plan.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ddp {

Status BucketPlanOptions::validate() const {
  if (capBytes == 0) return invalidArgument("BucketPlanOptions.capBytes must be > 0");
  if (firstCapBytes == 0) return invalidArgument("BucketPlanOptions.firstCapBytes must be > 0");
  return Status::ok();
}

std::vector<size_t> BucketPlan::reverseOrder(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  return order;
}

Result<BucketPlan> BucketPlan::compute(const std::vector<ParamLayout>& params, const std::vector<size_t>& order,
                                       const BucketPlanOptions& options) {
  DDP_RETURN_IF_ERROR(options.validate());
  const size_t n = params.size();
  if (order.size() != n) {
    return invalidArgument("BucketPlan: order has " + std::to_string(order.size()) + " entries for " +
                           std::to_string(n) + " parameters");
  }
  std::vector<bool> seen(n, false);
  for (size_t idx : order) {
    if (idx >= n || seen[idx]) {
      return invalidArgument("BucketPlan: order is not a permutation (entry " + std::to_string(idx) + ")");
    }
    seen[idx] = true;
  }

  // Per (dtype, device) key: the open bucket and how many buckets the key has closed.
  using Key = std::tuple<int, int, int>;
  struct Open {
    BucketSpec spec;
    size_t bytes = 0;
    size_t firstPos = 0;
    size_t closed = 0;
  };
  std::map<Key, Open> open;
  std::vector<std::pair<size_t, BucketSpec>> done;  // (position of first param in order, spec)
  for (size_t pos = 0; pos < n; ++pos) {
    const size_t idx = order[pos];
    const ParamLayout& p = params[idx];
    const Key key{static_cast<int>(p.dtype), static_cast<int>(p.device.type), p.device.index};
    Open& o = open[key];
    if (o.spec.params.empty()) {
      o.spec.dtype = p.dtype;
      o.spec.device = p.device;
      o.firstPos = pos;
    }
    o.spec.offsets.push_back(o.spec.numel);
    o.spec.params.push_back(idx);
    o.spec.numel += p.numel;
    o.bytes += p.numel * dtypeSize(p.dtype);
    const size_t cap = o.closed == 0 ? options.firstCapBytes : options.capBytes;
    if (o.bytes >= cap) {
      done.emplace_back(o.firstPos, std::move(o.spec));
      o.spec = BucketSpec{};
      o.bytes = 0;
      ++o.closed;
    }
  }
  for (auto& [key, o] : open) {
    if (!o.spec.params.empty()) done.emplace_back(o.firstPos, std::move(o.spec));
  }
  std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  BucketPlan plan;
  plan.bucketOf_.assign(n, 0);
  plan.positionOf_.assign(n, 0);
  for (auto& [pos, spec] : done) {
    const size_t b = plan.buckets_.size();
    for (size_t k = 0; k < spec.params.size(); ++k) {
      plan.bucketOf_[spec.params[k]] = b;
      plan.positionOf_[spec.params[k]] = k;
    }
    plan.buckets_.push_back(std::move(spec));
  }
  return plan;
}

std::vector<size_t> BucketPlan::flatOrder() const {
  std::vector<size_t> out;
  out.reserve(bucketOf_.size());
  for (const auto& b : buckets_) out.insert(out.end(), b.params.begin(), b.params.end());
  return out;
}

std::string BucketPlan::describe() const {
  std::string s = std::to_string(buckets_.size()) + " buckets:";
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const auto& spec = buckets_[b];
    s += " [" + std::to_string(b) + "] " + dtypeName(spec.dtype) + " " + spec.device.toString() + " params {";
    for (size_t k = 0; k < spec.params.size(); ++k) s += (k ? "," : "") + std::to_string(spec.params[k]);
    s += "} " + std::to_string(spec.numel) + " elems;";
  }
  return s;
}

}  // namespace ddp
