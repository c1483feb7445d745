#pragma once
// GradBucket and CommHook: how a bucket of gradients is reduced.
//
// Note [Hook ordering]
// Every rank must issue the same collectives in the same order, or Gloo/NCCL mismatch or hang
// (PyTorch 1.13's PowerSGD aborts on Gloo when two buckets' follow-up collectives interleave
// differently on different ranks). So the reducer calls CommHook::run() on ONE thread (its comm
// thread), for one bucket at a time, in bucket-index order. Inside run() a hook may issue
// collectives and wait on them (multi-stage hooks such as PowerSGD). It returns the tail of its
// work: a Work still in flight and a `finish` step. `finish` runs after that Work completes, in
// bucket order, and must NOT issue collectives (it decompresses / copies back). Single-stage
// hooks (allreduce, fp16) return without waiting, so several buckets are in flight at once.
//
// Thread model: run() is called on the reducer's comm thread only; finish() on the thread that
// completes the step, never concurrently for one hook. The Reducer (worker/ddp/reducer.h) runs
// finish() on its comm thread too, so a hook's run() and finish() calls never overlap.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/comm/backend.h"
#include "worker/core/parameter.h"

namespace ddp {

class GradBucket {
 public:
  GradBucket(size_t index, bool isLast, comm::BufferView buffer, std::vector<comm::BufferView> gradients,
             std::vector<Parameter*> parameters, uint64_t identity)
      : index_(index), isLast_(isLast), buffer_(buffer), gradients_(std::move(gradients)),
        parameters_(std::move(parameters)), identity_(identity) {}

  size_t index() const { return index_; }
  // True for the last bucket of the step (hooks advance per-step counters here).
  bool isLast() const { return isLast_; }
  // The flat 1-D buffer holding this bucket's gradients back to back (hooks reduce it in place).
  comm::BufferView buffer() const { return buffer_; }
  // Per-parameter views into buffer(), in the bucket's order.
  const std::vector<comm::BufferView>& gradients() const { return gradients_; }
  const std::vector<Parameter*>& parameters() const { return parameters_; }
  // Copies `values` (same count and dtype) into the bucket's buffer.
  Status setBuffer(comm::BufferView values);
  // Stable identity of the bucket's contents: a hash of its parameters' names, shapes and dtypes
  // in order. Per-bucket hook state (PowerSGD error feedback, P/Q) is keyed by it, never by
  // index(), because the layout before the first rebuild differs from the one after.
  uint64_t identity() const { return identity_; }

 private:
  size_t index_;
  bool isLast_;
  comm::BufferView buffer_;
  std::vector<comm::BufferView> gradients_;
  std::vector<Parameter*> parameters_;
  uint64_t identity_;
};

// What a hook leaves in flight (Note [Hook ordering]).
struct HookResult {
  comm::WorkPtr work;              // may be null when nothing is in flight
  std::function<Status()> finish;  // may be empty; no collectives inside
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // Reduces bucket.buffer() (sum over ranks divided as the hook defines; built-ins average).
  virtual Result<HookResult> run(GradBucket& bucket) = 0;

  // Checkpointable state (PowerSGD). Stateless hooks keep the defaults.
  virtual bool hasState() const { return false; }
  virtual Result<std::string> saveState() const { return std::string(); }
  virtual Status loadState(std::string_view /*state*/) { return Status::ok(); }
};

}  // namespace ddp
