#pragma once
// CrossMemoryAllreduce: the allreduce of ranks that can read one another's memory (Note
// [Same-host allreduce] in worker/comm/cross_memory.h). Chunk c of the buffer (elements
// count * c / n up to count * (c + 1) / n) is reduced by rank c alone: it reads chunk c from
// every peer in segments of kCrossMemorySegmentBytes into a scratch segment and reduces each
// into its own buffer, peers in the order c + 1, c + 2, ... (mod n); an average divides each
// segment once, after its last peer. Then every rank reads the other reduced chunks from their
// owners straight into its buffer.
//
// Synchronisation goes through `exchange(words, round)`, a small allgather over the transport
// that leaves every rank's words[i] in words[i] (rounds 0, 1, 2 need distinct slots): round 0
// trades the buffers' addresses and is the entry barrier; round 1 says every chunk is reduced;
// round 2 keeps every buffer in place until no peer reads it any more.
// Errors: throws what CrossMemory::read() and `exchange` throw.
// Thread model: not thread-safe; one executor thread owns it.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "worker/comm/cross_memory.h"
#include "worker/comm/types.h"

namespace ddp::comm {

// From these sizes an allreduce reads peers' memory; a smaller one takes the ring. With the
// synchronisations over Gloo (no shared futex page): on an idle pair of cores the two paths take
// the same time from 256 KiB to 4 MiB and reading wins from 16 MiB (3.5 vs 4.3 ms), but with
// both cores computing the three exchanges' wake-ups cost more than the copies save (the CNN's
// ~1 MB buckets: 2 workers 1.46-1.53x one instead of 1.53-1.63x with a 256 KiB threshold), hence
// 4 MiB. With the futex page (Note [Shared-memory phases]) the wake-ups are one per exchange, and
// the same CNN went from 1.68x to 1.74x (medians of 18 alternating runs; idle cores: equal from
// 4 KiB to 1 MiB, 2x faster at 4 MiB), hence 256 KiB (docs/PERFORMANCE.md).
inline constexpr size_t kCrossMemoryMinBytes = size_t{4} << 20;
inline constexpr size_t kSharedWordsMinBytes = size_t{256} << 10;
inline constexpr size_t kCrossMemorySegmentBytes = size_t{256} << 10;

class CrossMemoryAllreduce {
 public:
  using Exchange = std::function<void(std::vector<uint64_t>& words, int round)>;

  CrossMemoryAllreduce(std::shared_ptr<const CrossMemory> memory, int rank, int size)
      : memory_(std::move(memory)), rank_(rank), size_(size) {}

  void run(BufferView buf, ReduceOp op, const Exchange& exchange);

 private:
  // Reduces this rank's chunk [begin, end) elements from every peer whose buffer is at `addr`.
  void reduceOwnChunk(BufferView buf, ReduceOp op, const std::vector<uint64_t>& addr);

  const std::shared_ptr<const CrossMemory> memory_;
  const int rank_;
  const int size_;
  std::vector<char> segment_;
};

}  // namespace ddp::comm
