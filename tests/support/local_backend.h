#pragma once
// LocalBackend: an in-process comm::Backend for ranks running as threads of one process.
//
// It is the first user-plugged Backend (Backend is a public interface) and the multi-rank test
// fixture for code written against Backend before (or without) a real transport. Every rank owns
// one LocalBackend; all of them share one LocalGroup, which matches the ranks' ops and runs them
// on plain shared memory.
//
// Semantics (Note [LocalGroup matching] in local_group.cc):
//  - Collectives are matched by each rank's collective issue number (1st collective of rank 0
//    with the 1st of rank 1, ...). Send/recv pairs are matched by (src, dst, tag) in FIFO order
//    and do not take a collective number.
//  - An op completes when every participant has issued it. Ranks that disagree (op type, count,
//    dtype, reduce op, root) get InvalidArgument on every rank. A rank whose own arguments are
//    bad gets an already-failed Work and its peers fail fast with InvalidArgument too.
//  - Each op has a deadline (OpOptions::timeout or the group's default). A collective not
//    matched by the earliest participant's deadline fails on every participant (and on late
//    arrivals) with Timeout naming the missing ranks.
//  - abort() on one rank fails its own pending and future ops with Aborted(reason) and fails
//    peers' pending and future ops that need that rank with Aborted naming it.
//  - f16 / bf16 reductions accumulate in f32; i32 in i64; avg on integers truncates.
//  - Devices: CPU by default. A group can be told to accept other device types (e.g. CUDA) to
//    stand in for a GPU backend in routing tests; it then treats the memory as host memory.
//
// Thread model: the LocalGroup's executor thread (local_group.h) runs matched ops and completes
// their Works, so Work callbacks run on it. All LocalBackend methods are thread-safe; each
// backend's state is guarded by LocalBackend::mu_ (taken before the group's lock, never after).

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/local_group.h"
#include "worker/comm/backend.h"

namespace ddp::comm {

class LocalBackend final : public Backend {
 public:
  LocalBackend(std::shared_ptr<LocalGroup> group, int rank);
  ~LocalBackend() override;

  int rank() const override { return rank_; }
  int size() const override;
  std::string name() const override;
  bool supportsDevice(DeviceType type) const override;

  WorkPtr allreduce(BufferView buf, ReduceOp op, const OpOptions& opts = {}) override;
  WorkPtr broadcast(BufferView buf, int root, const OpOptions& opts = {}) override;
  WorkPtr allgather(BufferView in, BufferView out, const OpOptions& opts = {}) override;
  WorkPtr reduceScatter(BufferView in, BufferView out, ReduceOp op,
                        const OpOptions& opts = {}) override;
  WorkPtr gather(BufferView in, BufferView out, int root, const OpOptions& opts = {}) override;
  WorkPtr barrier(const OpOptions& opts = {}) override;
  WorkPtr send(BufferView buf, int dst, int tag, const OpOptions& opts = {}) override;
  WorkPtr recv(BufferView buf, int src, int tag, const OpOptions& opts = {}) override;

  Status startCoalescing() override;
  WorkPtr endCoalescing() override;

  void abort(const Status& reason) override;
  bool isAborted() const override;
  Duration defaultTimeout() const override;

  using Op = LocalOp;

 private:
  // Validates the arguments (op_args.h) and submits the op to the group (a bad send or recv fails
  // at once; a bad collective fails on every rank, Note [LocalGroup matching]).
  WorkPtr issue(const OpArgs& args, const OpOptions& opts);

  const std::shared_ptr<LocalGroup> group_;
  const int rank_;

  mutable std::mutex mu_;
  uint64_t seq_ = 0;                       // guarded by mu_
  uint64_t collSeq_ = 0;                   // guarded by mu_
  Status aborted_;                         // guarded by mu_ (non-ok once aborted)
  bool coalescing_ = false;                // guarded by mu_
  std::thread::id coalescingThread_;       // guarded by mu_
  std::vector<Op> held_;                   // guarded by mu_: ops held by the coalescing scope
  std::vector<std::weak_ptr<CompletionWork>> outstanding_;  // guarded by mu_
};

// Runs fn(rank, backend) on `world` threads sharing one fresh LocalGroup and joins them.
void runLocalRanks(int world, const std::function<void(int rank, Backend& backend)>& fn,
                   LocalGroupOptions options = {});

}  // namespace ddp::comm
