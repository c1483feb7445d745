#pragma once
// Cross-memory reads between the ranks of one host (Note [Same-host allreduce]).
//
// Note [Same-host allreduce]
// Ranks on one machine that talk over loopback TCP pay the kernel's protocol stack and two
// copies per byte (into the socket, out of it): on 2 cores that was two thirds of the DDP step's
// overhead (docs/PERFORMANCE.md). When every rank of a communicator runs on one kernel and in
// one PID namespace (a local launch, or several ranks in one pod), a rank can instead read a
// peer's buffer straight out of the peer's address space with process_vm_readv(2): one copy, no
// protocol. An allreduce from kSharedWordsMinBytes (256 KiB; kCrossMemoryMinBytes, 4 MiB, when
// the ranks could not share a futex page; worker/comm/cross_memory_allreduce.h says why) then
// runs as: exchange buffer addresses (a small allgather, through the futex page of Note
// [Shared-memory phases], else a ring over Gloo; also the entry barrier); each rank reads its
// own chunk from every peer and
// reduces it in segments (a scratch segment that stays in cache); a barrier; each rank reads
// every other chunk, reduced, from its owner straight into its buffer; a last barrier, so that
// no rank leaves (and reuses its buffer) while a peer still reads from it. Each chunk is reduced
// once, by its owner, so every rank ends with the same bits, as with the ring. With more than
// two ranks the order of the additions differs from the ring's: a run resumed on hosts that
// take the other path is not bitwise the run it continues (on one host the choice is the same
// each time, so Note [Deterministic buckets] holds).
//
// When: GlooBackend::create() exchanges each rank's HostIdentity through the store and, when
// sameHost() holds for all of them, each rank reads a probe word from every peer; the path is
// used only when every rank's probe succeeded (each rank publishes its verdict and reads all of
// them, so all ranks decide alike; the futex page is agreed in the same rounds, Note [Same-host
// agreement] in same_host_agreement.h). Kubernetes pods are separate PID namespaces: ranks in
// different pods always use TCP. GlooOptions::sameHostMemory turns it off (a worker's
// --same-host-memory off / DDP_SAME_HOST_MEMORY=off).
//
// Failure: the barriers have the op's deadline and end at abort (futex waits that also notice a
// peer's process ending, or Gloo waits); a read from a peer that
// died fails at once (ESRCH) and throws gloo::IoException naming the peer, as a broken
// connection does.
// Thread model: CrossMemory is immutable after construction; read() is safe from any thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::comm {

// Where a process runs, as far as cross-memory reads care.
struct HostIdentity {
  std::string bootId;         // /proc/sys/kernel/random/boot_id: one running kernel
  uint64_t pidNamespace = 0;  // inode of /proc/self/ns/pid
  int64_t pid = 0;            // in that namespace
  uint64_t probeAddress = 0;  // a word of known value in this process (the probe)

  std::string encode() const;
  // InvalidArgument naming what is malformed.
  static Result<HostIdentity> decode(const std::string& text);
};

// This process's identity (its probe word included).
Result<HostIdentity> thisProcess();

// True when every rank runs on the same kernel in the same PID namespace (and there are two or
// more): the precondition for reading a peer's memory.
bool sameHost(const std::vector<HostIdentity>& ranks);

// The value of every process's probe word.
inline constexpr uint64_t kCrossMemoryProbe = 0x6464702d636d6131ull;

class CrossMemory {
 public:
  explicit CrossMemory(std::vector<HostIdentity> ranks) : ranks_(std::move(ranks)) {}

  // Copies `bytes` at `remote` in rank `peer`'s address space to `local`. Throws
  // gloo::IoException naming the peer and the error (ESRCH: the peer has exited).
  void read(int peer, uint64_t remote, void* local, size_t bytes) const;
  // read() of each peer's probe word: OK, or the first failure, named.
  Status probe(int self) const;
  // Every rank's process id, in rank order.
  std::vector<int64_t> pids() const;

 private:
  std::vector<HostIdentity> ranks_;
};

}  // namespace ddp::comm
