#pragma once
// SharedSmallOps: allreduce, broadcast and allgather of a few bytes per rank through the shared
// page of the ranks of one host (Note [Small ops through the page]).
//
// Note [Small ops through the page]
// A trainer agrees on its command word (stop, checkpoint now; worker/training/command_word.h)
// with an 8-byte allreduce every step. Over Gloo's TCP ring that is a send and a receive per
// rank, each waking the peer's Gloo I/O loop and then its executor, on the cores the training
// threads use: in a scheduler trace of the CNN's two-worker steps the loop threads switched 2.6
// times a step and the executors 5.4 (284-293 and 2028-2079 switches in 600 steps after this,
// against 1516-1576 and 3243-3252), and an 8-byte allreduce took ~100 us instead of a few
// (docs/PERFORMANCE.md). When the ranks share a page (Note [Shared-memory phases]) an op of at
// most kSharedSmallBytes per rank (the words a rank has on the page) is one exchange of the
// page's words instead, no TCP: every rank writes its bytes and reads everyone's. An allreduce
// then folds the ranks' values in rank order (rank 0's, then rank 1's, ...) with the kernel of
// reduce_kernels.h, so every rank computes the same bits; an average divides that sum once
// (divideInPlace), as the ring does. A broadcast keeps the root's bytes; GlooCollectives'
// barrier, an allgather of one word, comes here too. The page's failure rules apply: a peer's
// abort or ended process, this communicator's abort (`abandon`) and the deadline end a wait with
// gloo::IoException.
// Thread model: the executor thread (one op at a time), as GlooCollectives.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "worker/comm/shared_words.h"
#include "worker/comm/types.h"

namespace ddp::comm {

inline constexpr size_t kSharedSmallBytes = kSharedWordsPerRank * sizeof(uint64_t);

class SharedSmallOps {
 public:
  SharedSmallOps(std::shared_ptr<SharedWords> words, int rank, int size, std::function<bool()> abandon);

  // Whether an op of `bytesPerRank` (> 0) bytes per rank goes through the page.
  static bool fits(size_t bytesPerRank) { return bytesPerRank > 0 && bytesPerRank <= kSharedSmallBytes; }

  // Preconditions (all three): fits() of the per-rank bytes; every rank calls the same op with
  // the same sizes in the same order (the op header checked that).
  void allreduce(BufferView buf, ReduceOp op, Deadline deadline);
  void broadcast(BufferView buf, int root, Deadline deadline);
  // `out` holds `size` blocks of `block` bytes, this rank's already in its place.
  void allgather(char* out, size_t block, Deadline deadline);

 private:
  // Every rank's `bytes` bytes (this rank's from `mine`); rank r's start at from(r).
  void exchange(const void* mine, size_t bytes, Deadline deadline);
  const char* from(int r) const { return reinterpret_cast<const char*>(&words_[static_cast<size_t>(r) * per_]); }

  std::shared_ptr<SharedWords> page_;
  const int rank_;
  const int size_;
  std::function<bool()> abandon_;
  std::vector<uint64_t> words_;  // size x per_ words: the last exchange
  size_t per_ = 0;               // words per rank in the last exchange
};

}  // namespace ddp::comm
