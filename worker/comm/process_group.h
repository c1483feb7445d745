#pragma once
// ProcessGroup: one comm::Backend over several member backends of the same ranks, routing each
// op by the device of its buffers, as c10d's multi-backend process group does: CPU buffers go
// to the member that supports CPU (Gloo), CUDA buffers to the member that supports CUDA (NCCL).
// Control collectives without buffers (barrier) run on the CPU member; small control data
// (flags, counts) are CPU buffers and so route there too.
//
// Rules:
//  - Routing: for each device type, the first member (in construction order) that supports it.
//  - An op whose buffers are on different device types, or on a device type no member
//    supports, fails at once with InvalidArgument naming the devices and the members.
//  - Works: each op's Work carries the group's own seq (1, 2, ... in issue order across
//    members); it completes with the member's Work.
//  - Coalescing scopes are opened on every member and ended on every member; the scope's Work
//    completes when every member's batch has (the first failure wins).
//  - abort() aborts every member; the group counts as aborted once any member is.
//
// Thread model: thread-safe. mu_ serialises issue so the group's seq order is the order in
// which members see the ops. Completion callbacks run on the members' completing threads.

#include <memory>
#include <mutex>
#include <vector>

#include "worker/comm/backend.h"

namespace ddp::comm {

class ProcessGroup final : public Backend {
 public:
  // Members must agree on rank and size, and at least one must support CPU.
  static Result<std::unique_ptr<ProcessGroup>> create(std::vector<std::unique_ptr<Backend>> members);
  // Non-owning: the members must outlive the group.
  static Result<std::unique_ptr<ProcessGroup>> createUnowned(std::vector<Backend*> members);

  int rank() const override { return members_[0]->rank(); }
  int size() const override { return members_[0]->size(); }
  std::string name() const override;  // "pg(gloo,nccl)"
  bool supportsDevice(DeviceType type) const override { return route(type) != nullptr; }

  // The member that runs ops on `type` buffers, or nullptr.
  Backend* route(DeviceType type) const;
  size_t numMembers() const { return members_.size(); }
  Backend& member(size_t i) const { return *members_[i]; }

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
  // The CPU member's default timeout.
  Duration defaultTimeout() const override { return control_->defaultTimeout(); }

 private:
  ProcessGroup(std::vector<std::unique_ptr<Backend>> owned, std::vector<Backend*> members);
  static Status validateMembers(const std::vector<Backend*>& members);

  // Picks the member for an op over `views`; a failed Result if devices mix or none fits.
  Result<Backend*> pick(const char* op, std::initializer_list<BufferView> views) const;
  // Runs `issue` on `member` under mu_ and wraps its Work with the group's seq.
  template <typename F>
  WorkPtr run(OpType type, size_t bytes, Result<Backend*> member, F&& issue);

  std::vector<std::unique_ptr<Backend>> owned_;
  std::vector<Backend*> members_;
  Backend* control_ = nullptr;  // the first CPU member

  std::mutex mu_;
  uint64_t seq_ = 0;  // guarded by mu_
};

// One Work that completes when every Work in `works` has, with the first failure (or ok).
// Its seq, op type and bytes are the given ones.
WorkPtr joinWorks(std::vector<WorkPtr> works, uint64_t seq, OpType type, size_t bytes,
                  Duration timeout);

}  // namespace ddp::comm
