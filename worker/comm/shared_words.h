#pragma once
// SharedWords: a small allgather of a few words per rank through shared memory, for the
// ranks of one communicator on one host (Note [Shared-memory phases]).
//
// Note [Shared-memory phases]
// The same-host allreduce (Note [Same-host allreduce]) moves its bytes with process_vm_readv but
// synchronises three times per op (addresses, "every chunk reduced", "nobody reads any more").
// Over Gloo each is a ring allgather: a TCP message per step, which wakes the peer's I/O loop,
// which wakes its executor. With two workers on two cores every such wake-up preempts a compute
// thread, and that cost, not the bytes, kept the CNN's 2-worker speedup under 1.7
// (docs/PERFORMANCE.md). Here each synchronisation is one futex: rank 0 creates a memfd page,
// the others open it through /proc/<pid>/fd (the access check of process_vm_readv, which the path
// already passed), and an exchange is: write this rank's word, add one to a shared arrival
// count, and wait for the count to reach (exchange + 1) x ranks; the last rank to arrive wakes
// the others. A waiting rank first spins on the count for up to kSharedWordsSpin, then sleeps on
// it: on a virtual machine a futex wake-up of a thread whose core went idle costs tens of
// microseconds (a 256 KiB allreduce on two idle cores took 92-107 us sleeping at once, 54-60 us
// spinning first; docs/PERFORMANCE.md). It spins only when the ranks do not outnumber this
// process's cores: with 4 ranks on 2 cores a spinning rank holds the core that the rank it waits
// for needs (the same allreduce took 290 us sleeping, 410-630 us spinning). The cores counted are
// this process's affinity mask: ranks pinned to one core each do not spin. The spin yields the
// core between polls (sched_yield): with two workers on two cores the scheduler often wakes a
// rank's executor onto the core where the peer's training thread is still finishing its
// backward, and a spin that only paused held that core, delaying the very arrival it waited for
// (a scheduler trace showed 50-70 us of it in most CNN steps); yielding hands the core back to
// that thread and still polls at once when the core is otherwise idle. CNN 2 workers vs 1: 1.890
// against 1.841 (exposed communication 0.21 against 0.27 ms a step); an exchange of an idle pair
// takes a few microseconds longer (docs/PERFORMANCE.md). Words alternate
// between two slots by exchange parity: a rank can write slot e + 1 only after every rank
// arrived at e, that is after every rank finished reading slot e - 1.
// Every rank runs the same exchanges in the same order (the executor's collective order), so the
// counts agree.
//
// Failure: a waiting rank sleeps in slices of at most kSharedWordsSlice and between them gives up
// (gloo::IoException, as a released Gloo wait does) when `abandon()` turns true (this rank's
// communicator was aborted), when any rank aborted or destroyed its communicator (GlooWaitSet's
// abort and the destructor call abort(), which marks the page and wakes every waiter: what a
// closed TCP connection tells the peers over Gloo), when a peer's process has ended (a pidfd per
// peer, opened when the page was agreed, so a reused pid cannot pass for the peer, and a zombie
// counts as ended) or when the deadline passes. A given-up exchange leaves the counts disagreeing,
// so every later exchange on the page fails at once (as does one that starts after any rank's
// abort); the communicator is aborted after a failed op anyway, and its successor gets a new page.
// Thread model: one executor thread calls allgather(); abort() from any thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::comm {

inline constexpr int kSharedWordsMaxRanks = 64;
inline constexpr size_t kSharedWordsPerRank = 4;  // an OpHeader
inline constexpr std::chrono::milliseconds kSharedWordsSlice{20};
inline constexpr std::chrono::microseconds kSharedWordsSpin{50};

class SharedWords {
 public:
  // A new page (a memfd of this process), for rank 0 of `size` ranks.
  static Result<std::unique_ptr<SharedWords>> create(int rank, int size);
  // Rank 0's page, its file descriptor `fd` in process `ownerPid`: Unavailable when it cannot be
  // opened.
  static Result<std::unique_ptr<SharedWords>> open(int64_t ownerPid, int fd, int rank, int size);
  ~SharedWords();
  SharedWords(const SharedWords&) = delete;
  SharedWords& operator=(const SharedWords&) = delete;

  // Opens a pidfd for every peer (pids[r] is rank r's process), so that waits notice a peer's
  // process ending; Unavailable naming the rank whose process is gone. Call before allgather().
  Status watch(const std::vector<int64_t>& pids);

  int fd() const { return fd_; }
  // Whether a waiting allgather() spins before it sleeps (Note [Shared-memory phases]).
  bool spins() const { return spins_; }

  // k = words.size() / ranks words per rank (1 to kSharedWordsPerRank): this rank's k words at
  // words[rank * k] in, every rank's out. Throws gloo::IoException when a peer's process ended,
  // `abandon()` turned true or `deadline` passed first; std::invalid_argument for a bad size.
  void allgather(std::vector<uint64_t>& words, Deadline deadline, const std::function<bool()>& abandon);
  // Marks the page aborted by this rank (the communicator's abort; the destructor does it too)
  // and wakes every rank's waiting allgather(): from then on a wait that is not complete fails
  // naming this rank, as a closed connection fails a Gloo wait. Thread-safe.
  void abort();

 private:
  struct Page;
  SharedWords(int fd, Page* page, int rank, int size);
  static Result<std::unique_ptr<SharedWords>> map(int fd, int rank, int size, bool init);
  // Throw when a rank aborted the page / a peer's process has ended.
  void checkAborted() const;
  void checkPeers() const;
  void wake();
  // The arrival count once it reaches `target` or kSharedWordsSpin passed (`seen` at once when
  // this rank does not spin).
  uint32_t spin(uint32_t seen, uint32_t target) const;

  int fd_ = -1;
  Page* page_ = nullptr;
  const int rank_;
  const int size_;
  const bool spins_;  // the ranks do not outnumber this process's cores
  std::vector<int64_t> pids_;
  std::vector<int> pidfds_;  // -1 for this rank; set by watch()
  uint32_t exchanges_ = 0;         // completed by this rank
  bool broken_ = false;            // an exchange failed: the counts no longer agree
};

}  // namespace ddp::comm
