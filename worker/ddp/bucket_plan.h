#pragma once
// BucketPlan: which parameters share a gradient bucket, and in which order buckets are reduced.
// A pure function of the parameters' sizes, dtypes and devices and of an order; the Reducer
// carries the plan out (see Note [Bucket assignment]).
//
// Note [Bucket assignment]
// Parameters are visited in `order` (by default reverse registration order: backward produces
// the last layer's gradients first). Buckets are keyed by (dtype, device): each key has one open
// bucket; a parameter joins the open bucket of its key, and a bucket closes as soon as its size
// reaches the key's current cap. The first bucket of each key is capped at firstCapBytes
// (1 MiB), later ones at capBytes (25 MiB), so the first reduction starts early in backward. A
// parameter larger than the cap gets a bucket of its own. Buckets are numbered by the position
// of their first parameter in `order` (so bucket 0 holds the gradients expected first), and
// inside a bucket parameters keep the visiting order. After the first iteration the Reducer
// recomputes the plan with `order` = the order gradients actually became ready (rank 0's, so all
// ranks agree), as PyTorch's reducer does.
// Thread model: plain values and pure functions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace ddp {

inline constexpr size_t kDefaultBucketCapBytes = size_t{25} << 20;
inline constexpr size_t kDefaultFirstBucketCapBytes = size_t{1} << 20;

// What the planner needs to know about one parameter.
struct ParamLayout {
  size_t numel = 0;
  DType dtype = DType::kF32;
  Device device = Device::cpu();
};

struct BucketSpec {
  DType dtype = DType::kF32;   // the parameters' dtype (the key)
  Device device = Device::cpu();
  std::vector<size_t> params;   // indices into the registered parameters, in bucket order
  std::vector<size_t> offsets;  // element offset of each parameter inside the bucket
  size_t numel = 0;             // total elements
  bool operator==(const BucketSpec&) const = default;
};

struct BucketPlanOptions {
  size_t capBytes = kDefaultBucketCapBytes;
  size_t firstCapBytes = kDefaultFirstBucketCapBytes;
  Status validate() const;
};

class BucketPlan {
 public:
  BucketPlan() = default;

  // Assigns every parameter to a bucket (Note [Bucket assignment]). `order` must be a
  // permutation of 0..params.size()-1; InvalidArgument otherwise.
  static Result<BucketPlan> compute(const std::vector<ParamLayout>& params, const std::vector<size_t>& order,
                                    const BucketPlanOptions& options);
  // n-1, n-2, ..., 0.
  static std::vector<size_t> reverseOrder(size_t n);

  const std::vector<BucketSpec>& buckets() const { return buckets_; }
  size_t numBuckets() const { return buckets_.size(); }
  size_t numParams() const { return bucketOf_.size(); }
  // The bucket holding parameter `param`, and its position inside that bucket.
  size_t bucketOf(size_t param) const { return bucketOf_[param]; }
  size_t positionOf(size_t param) const { return positionOf_[param]; }
  // All parameters, bucket after bucket (the order the plan would be recomputed from).
  std::vector<size_t> flatOrder() const;
  // "3 buckets: [0] f32 cpu 2 params 262144 elems, ..." for logs and test messages.
  std::string describe() const;

  bool operator==(const BucketPlan& other) const { return buckets_ == other.buckets_; }

 private:
  std::vector<BucketSpec> buckets_;
  std::vector<size_t> bucketOf_;
  std::vector<size_t> positionOf_;
};

}  // namespace ddp
