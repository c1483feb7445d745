#pragma once
// Note [Loopback TCP ceiling]
// What the machine itself allows a ring allreduce: the bytes a ring must move, moved by plain TCP
// between the same processes, with nothing else (no reduction, no headers, no Gloo). Each rank
// sends 2(n-1)/n of the buffer to its right neighbour while it receives as much from its left
// (full duplex: one sender and one receiver thread per stream, 1 MiB writes), over `streams`
// connections per neighbour pair (the share split evenly). bench_collectives times it beside our
// allreduce and prints our busbw as a fraction of its busbw: the part of the loopback ceiling the
// ring uses. Sockets keep the kernel's default buffer sizes, as Gloo's do.
// Thread model: one TcpRing per rank process, driven by one thread; move() starts and joins its
// own threads. Every socket read and write has a 60 s timeout.

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/store/store.h"

namespace ddp::bench {

class TcpRing {
 public:
  // Listens on loopback, publishes the port under `prefix`/<rank> in `store`, connects `streams`
  // sockets to rank (rank+1)%world and accepts `streams` from rank (rank-1)%world.
  static Result<std::unique_ptr<TcpRing>> connect(comm::Store& store, const std::string& prefix, int rank, int world,
                                                  int streams, Deadline deadline);
  ~TcpRing();
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  // Sends `bytes` to the right neighbour and receives `bytes` from the left one, split over the
  // streams. Unavailable on a socket error or timeout.
  Status move(size_t bytes);
  int streams() const { return static_cast<int>(out_.size()); }

 private:
  TcpRing() = default;
  std::vector<int> out_, in_;
  std::vector<char> sendBuf_, recvBuf_;
};

}  // namespace ddp::bench
