#pragma once
// GlooCollectives: runs one collective on a connected Gloo context, synchronously, on the
// calling thread (GlooBackend's executor). Every algorithm is ours, over Gloo unbound buffers
// created through a GlooWaitSet, so that abort releases every wait (Note [Abortable waits]):
// a pipelined ring allreduce, a ring reduce-scatter and allgather, a broadcast (direct for small
// buffers, a pipelined ring for large ones), a direct gather, and a barrier (Note [Ring
// collectives]); plus a fused allreduce over a flattened scratch buffer for coalesced batches.
// With a shared page, ops of a few bytes per rank go through it instead (Note [Small ops through
// the page]), and large allreduces read the peers' memory (Note [Same-host allreduce]).
// OpHeader (the description ranks compare before each op) lives here too; GlooHeaderLane
// exchanges it.
//
// Errors: every method may throw Gloo's exceptions (gloo::IoException, gloo::EnforceNotMet);
// GlooBackend catches them at its boundary. A wait released by abort throws gloo::IoException.
// Thread model: not thread-safe; one executor thread owns it (the wait set is thread-safe).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/comm/cross_memory_allreduce.h"
#include "worker/comm/gloo_wait_set.h"
#include "worker/comm/shared_small_ops.h"
#include "worker/comm/shared_words.h"
#include "worker/comm/types.h"

namespace gloo {
class Context;
}

namespace ddp::comm {

// Note [Op header]
// Before each collective (or coalesced batch) every rank exchanges a 32-byte header: op type,
// dtype, reduce op, root, element count and a hash of a batch's members. Gloo itself aborts the
// process (an enforce on the device thread) when peers post different sizes; comparing headers
// first turns that into a failed Work with the same message on every rank, and the
// communicator stays usable because every rank skips the same op.
struct OpHeader {
  uint64_t collSeq = 0;  // index among collectives (p2p ops excluded)
  uint8_t type = 0;      // OpType
  uint8_t dtype = 0;     // DType
  uint8_t reduceOp = 0;  // ReduceOp
  uint8_t pad = 0;
  int32_t root = -1;
  uint64_t count = 0;    // elements (per-rank input), or members of a batch
  uint64_t hash = 0;     // batch description hash, 0 for single ops

  bool operator==(const OpHeader&) const = default;
  std::string describe() const;
};
static_assert(sizeof(OpHeader) == 32, "OpHeader travels as 32 raw bytes");

// One member of a fused allreduce.
struct FusedMember {
  BufferView buf;
};

class GlooCollectives {
 public:
  // `waits` registers the buffers of every op (abort releases them); it outlives this object.
  // With `crossMemory` (agreed by every rank), large allreduces read peers' memory (Note
  // [Same-host allreduce]).
  GlooCollectives(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits,
                  std::shared_ptr<const CrossMemory> crossMemory = nullptr,
                  std::shared_ptr<SharedWords> sharedWords = nullptr);

  int rank() const { return rank_; }
  int size() const { return size_; }

  void allreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout);
  // Allreduce of many buffers with the same dtype and op as one Gloo operation.
  void fusedAllreduce(const std::vector<BufferView>& bufs, ReduceOp op, uint32_t tag,
                      std::chrono::milliseconds timeout);
  void broadcast(BufferView buf, int root, uint32_t tag, std::chrono::milliseconds timeout);
  void allgather(BufferView in, BufferView out, uint32_t tag, std::chrono::milliseconds timeout);
  void reduceScatter(BufferView in, BufferView out, ReduceOp op, uint32_t tag,
                     std::chrono::milliseconds timeout);
  void gather(BufferView in, BufferView out, int root, uint32_t tag, std::chrono::milliseconds timeout);
  void barrier(uint32_t tag, std::chrono::milliseconds timeout);

 private:
  // Whether an allreduce of `buf` takes the same-host path (Note [Same-host allreduce]).
  bool readsPeerMemory(BufferView buf) const;
  void sameHostAllreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout);
  // Note [Direct small allreduce] (in Note [Ring collectives]).
  void directAllreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout);
  char* scratch(size_t bytes);
  GlooWaitSet::Buffer buffer(void* data, size_t bytes);
  // The ring allgather of `block` bytes per rank in `out` (rank r's at r * block, its own in place),
  // on ring steps firstStep .. firstStep + n - 2 of `tag`.
  void ringAllgather(char* out, size_t block, uint32_t tag, int firstStep, std::chrono::milliseconds timeout);

  std::shared_ptr<::gloo::Context> context_;
  std::shared_ptr<GlooWaitSet> waits_;
  const int rank_;
  const int size_;
  std::vector<char> scratch_;
  std::vector<char> scratch2_;
  std::vector<char> ringTmp_;  // allreduce: two segments in flight
  std::vector<char> direct_;   // directAllreduce: every rank's buffer
  std::unique_ptr<CrossMemoryAllreduce> crossAllreduce_;  // set when the ranks agreed on it
  std::shared_ptr<SharedWords> sharedWords_;  // its exchanges, when every rank mapped the page
  std::unique_ptr<SharedSmallOps> small_;     // with sharedWords_ (Note [Small ops through the page])
};

}  // namespace ddp::comm
