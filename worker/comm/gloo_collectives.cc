#include "worker/comm/gloo_collectives.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>

#include "worker/comm/reduce_kernels.h"

namespace ddp::comm {
namespace {

// Slots of our own unbound-buffer algorithms: a prefix no Gloo algorithm uses (theirs are
// 0x01..0x08), the op tag, and the step.
constexpr uint64_t kRingSlotPrefix = 0xD0ull << 56;
uint64_t ringSlot(uint32_t tag, int step) {
  return kRingSlotPrefix | (static_cast<uint64_t>(tag) << 16) | static_cast<uint64_t>(step & 0xffff);
}

void waitRecvOrThrow(::gloo::transport::UnboundBuffer& b, std::chrono::milliseconds timeout) {
  if (!b.waitRecv(timeout)) throw ::gloo::IoException("receive aborted");
}
void waitSendOrThrow(::gloo::transport::UnboundBuffer& b, std::chrono::milliseconds timeout) {
  if (!b.waitSend(timeout)) throw ::gloo::IoException("send aborted");
}

}  // namespace

std::string OpHeader::describe() const {
  std::string s = opTypeName(static_cast<OpType>(type));
  s += " #" + std::to_string(collSeq) + " " + std::to_string(count);
  if (static_cast<OpType>(type) == OpType::kCoalesced) {
    s += " ops (hash " + std::to_string(hash) + ")";
    return s;
  }
  s += std::string(" x ") + dtypeName(static_cast<DType>(dtype));
  const auto t = static_cast<OpType>(type);
  if (t == OpType::kAllreduce || t == OpType::kReduceScatter) {
    s += std::string(" ") + reduceOpName(static_cast<ReduceOp>(reduceOp));
  }
  if (root >= 0) s += " root " + std::to_string(root);
  return s;
}

GlooCollectives::GlooCollectives(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits,
                                 std::shared_ptr<const CrossMemory> crossMemory,
                                 std::shared_ptr<SharedWords> sharedWords)
    : context_(std::move(context)),
      waits_(std::move(waits)),
      rank_(context_->rank),
      size_(context_->size),
      sharedWords_(std::move(sharedWords)) {
  if (sharedWords_) {
    waits_->onAbort([words = sharedWords_] { words->abort(); });
    small_ = std::make_unique<SharedSmallOps>(sharedWords_, rank_, size_, [waits = waits_] { return waits->aborted(); });
  }
  if (crossMemory) crossAllreduce_ = std::make_unique<CrossMemoryAllreduce>(std::move(crossMemory), rank_, size_);
}

char* GlooCollectives::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

GlooWaitSet::Buffer GlooCollectives::buffer(void* data, size_t bytes) { return waits_->create(*context_, data, bytes); }

// Note [Ring collectives]
// Our own algorithms over unbound buffers (Note [Abortable waits] says why), on slots with a
// prefix no Gloo algorithm uses, the op tag and a step number (ringSlot). Within a slot, Gloo
// matches a pair's sends and recvs in the order they were posted, so a step may post several
// segments on one slot. Ranks compute every size from the op's shape alone, so each send has a
// recv of the same length and both sides skip the same empty pieces (Gloo needs no zero-byte
// messages). With n ranks, next = rank + 1, prev = rank - 1 (mod n):
//  - allreduce: the buffer is split into n chunks whose sizes differ by at most one element,
//    each chunk into the same number of segments. Reduce-scatter, n - 1 steps: at step t a rank
//    sends chunk (rank - t) to next and receives chunk (rank - t - 1) from prev, which it
//    reduces into its own; rank r then holds chunk r + 1 complete. Allgather, n - 1 steps: at
//    step t a rank sends chunk (rank + 1 - t) and receives chunk (rank - t) in place. Segments
//    stream: a segment is sent on as soon as it was reduced (or, in the allgather, received), so
//    the ring never waits for a whole chunk; received segments cycle through kRingWindow scratch
//    segments. Each rank sends 2 (n - 1) / n of the buffer (bandwidth-optimal), and every rank
//    ends with the same bits (each chunk is reduced once, by its owner, and copied).
//    Ordering: a rank posts its sends, and its receives, in (step, segment) order, and Gloo
//    moves a send to the wire only once its receive was posted, so the data of one pair
//    arrives in that order and the k-th completion of a buffer is its k-th posted receive.
//    Before the allgather receives into chunks the reduce-scatter sent from, those sends are
//    waited for.
//    Note [Paced own-chunk sends]: step 0 sends the rank's own chunk, which is ready at once,
//    but at most kRingWindow of its segments are posted ahead (segment k once k - kRingWindow
//    was sent), as Gloo's own ring does. Gloo moves a send to the wire only once the peer's
//    receive is posted: a send posted after that is written by the posting thread at once,
//    while a send posted before it waits in a queue and is written by the I/O loop when the
//    notice arrives, on the thread that should be reading. Posting all of step 0 up front
//    made the loop do both and doubled the context switches; paced, 2 ranks moved 16 MiB in
//    4.3-4.4 ms instead of 5.2-5.4 (bench_collectives, docs/PERFORMANCE.md).
//  - reduce-scatter (Note [Ring reduce-scatter]), allgather: the ring steps above.
//  - small allreduce (Note [Direct small allreduce]): while (n - 1) x bytes is at most
//    kDirectAllreduceBytes, every rank sends its whole buffer to every other rank in one hop
//    and folds the n buffers itself in rank order (rank 0's, then rank 1's, ...), so every rank
//    computes the same bits; an average divides that sum once. The ring's 2 (n - 1) hops cost
//    more than the bytes at these sizes: 2 ranks over TCP took 57-73 us from 8 B to 32 KiB
//    instead of 102-153 (Gloo's own ring 82-105, its bcube 59-85; bench_collectives
//    --same-host-memory off, docs/PERFORMANCE.md). Ranks that read each other's memory take
//    that path first (from 256 KiB).
//  - broadcast: up to kDirectBroadcastBytes the root sends to every rank (one hop); larger
//    buffers go along the ring from the root in segments, each rank forwarding a segment as
//    soon as it has it (a pipeline: the root sends the buffer once).
//  - gather: every rank sends to the root. barrier: an allgather of one word per rank (a rank
//    leaves it once every rank's word reached it, so every rank has entered).
namespace {

// Allreduce: segments of at most kRingSegmentBytes, chunks of kRingMinSplitBytes or more in at
// least two, kRingWindow scratch segments in flight (measured with bench_collectives, paced sends:
// 512 KiB segments 1.19-1.23x Gloo at 16 MiB on 2 ranks, 1 MiB 1.02-1.04x, 2 MiB 0.91x; a
// window of 4 was no faster; docs/PERFORMANCE.md). The pipelined broadcast uses the same
// segments (512 KiB against 1 MiB: 2.8-3.1 vs 3.1-3.4 ms at 16 MiB on 2 ranks).
constexpr size_t kRingSegmentBytes = size_t{512} << 10;
constexpr size_t kRingMinSplitBytes = size_t{1} << 20;
constexpr size_t kRingWindow = 2;
constexpr size_t kDirectBroadcastBytes = size_t{64} << 10;
// An allreduce whose (n - 1) x bytes, what each rank sends directly, is at most this goes direct
// (2 ranks over TCP: direct 79-80 us at 64 KiB, 121-126 at 256 KiB, 429-440 at 1 MiB, where
// Gloo's bcube took 91-92, 120 and 244-245).
constexpr size_t kDirectAllreduceBytes = size_t{256} << 10;

struct Piece {
  size_t offset = 0;  // bytes
  size_t bytes = 0;
};

// Piece `index` of `parts` of a range of `elems` elements of `elemSize` bytes at `base`: sizes
// differ by at most one element.
Piece pieceOf(size_t base, size_t elems, size_t elemSize, size_t parts, size_t index) {
  const size_t b = elems * index / parts, e = elems * (index + 1) / parts;
  return {base + b * elemSize, (e - b) * elemSize};
}

int mod(int a, int n) { return ((a % n) + n) % n; }

// The allreduce's split of a buffer of `count` elements of `es` bytes among `n` ranks: chunk c
// (mod n), each in `segs` segments, the same on every rank.
struct RingShape {
  int n = 0;
  size_t count = 0, es = 0, segs = 0;
  RingShape(int world, size_t elems, size_t elemSize) : n(world), count(elems), es(elemSize) {
    const size_t maxChunkBytes = (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n) * es;
    // At least two from kRingMinSplitBytes, so that one is on the wire while the other is reduced.
    segs = std::max<size_t>(maxChunkBytes >= kRingMinSplitBytes ? 2 : 1,
                            (maxChunkBytes + kRingSegmentBytes - 1) / kRingSegmentBytes);
  }
  Piece chunk(int c) const { return pieceOf(0, count, es, static_cast<size_t>(n), static_cast<size_t>(mod(c, n))); }
  Piece seg(const Piece& c, size_t k) const { return pieceOf(c.offset, c.bytes / es, es, segs, k); }
};

struct StepPiece {
  int step;
  Piece at;
};

// The reduce-scatter's received segments of `rank`, in step-then-segment order (empty ones left
// out), and the largest.
std::vector<StepPiece> reduceScatterPieces(const RingShape& s, int rank, size_t* maxBytes) {
  std::vector<StepPiece> pieces;
  *maxBytes = 0;
  for (int t = 0; t < s.n - 1; ++t) {
    const Piece c = s.chunk(rank - t - 1);
    for (size_t k = 0; k < s.segs; ++k) {
      const Piece p = s.seg(c, k);
      if (p.bytes > 0) pieces.push_back({t, p});
      *maxBytes = std::max(*maxBytes, p.bytes);
    }
  }
  return pieces;
}

// The allreduce's allgather: step t receives chunk (rank - t) in place into agRecv[t] and
// forwards each segment as it arrives (step t + 1 sends that same chunk) on agSend.
size_t allgatherPhase(const RingShape& s, int rank, uint32_t tag, std::vector<GlooWaitSet::Buffer>& agRecv,
                      ::gloo::transport::UnboundBuffer& agSend, std::chrono::milliseconds timeout) {
  const int n = s.n, rsSteps = n - 1, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (int t = 0; t < n - 1; ++t) {
    for (size_t k = 0; k < s.segs; ++k) {
      const Piece p = s.seg(s.chunk(rank - t), k);
      if (p.bytes > 0) agRecv[static_cast<size_t>(t)]->recv(prev, ringSlot(tag, rsSteps + t), p.offset, p.bytes);
    }
  }
  size_t sends = 0;
  for (int t = 0; t < n - 1; ++t) {
    for (size_t k = 0; k < s.segs; ++k) {
      const Piece p = s.seg(s.chunk(rank - t), k);
      if (p.bytes == 0) continue;
      waitRecvOrThrow(*agRecv[static_cast<size_t>(t)], timeout);
      if (t + 1 < n - 1) {
        agSend.send(next, ringSlot(tag, rsSteps + t + 1), p.offset, p.bytes);
        ++sends;
      }
    }
  }
  return sends;
}

}  // namespace

bool GlooCollectives::readsPeerMemory(BufferView buf) const {
  return crossAllreduce_ && buf.bytes() >= (sharedWords_ ? kSharedWordsMinBytes : kCrossMemoryMinBytes);
}

void GlooCollectives::sameHostAllreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  const Deadline deadline = Deadline::after(timeout);
  crossAllreduce_->run(buf, op, [&](std::vector<uint64_t>& words, int round) {
    if (sharedWords_) {  // Note [Shared-memory phases]
      sharedWords_->allgather(words, deadline, [this] { return waits_->aborted(); });
      return;
    }
    // Steps of their own: the ring allreduce's stay below 2n.
    ringAllgather(reinterpret_cast<char*>(words.data()), sizeof(uint64_t), tag, 2 * size_ + round * size_, timeout);
  });
}

void GlooCollectives::directAllreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  const size_t bytes = buf.bytes();
  if (direct_.size() < static_cast<size_t>(size_) * bytes) direct_.resize(static_cast<size_t>(size_) * bytes);
  char* all = direct_.data();  // not scratch(): a coalesced batch's flattened members live there
  std::memcpy(all + static_cast<size_t>(rank_) * bytes, buf.data, bytes);
  GlooWaitSet::Buffer in = buffer(all, static_cast<size_t>(size_) * bytes);
  GlooWaitSet::Buffer out = buffer(buf.data, bytes);
  const uint64_t slot = ringSlot(tag, 0);
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) in->recv(r, slot, static_cast<size_t>(r) * bytes, bytes);
  }
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) out->send(r, slot, 0, bytes);
  }
  for (int r = 0; r < size_ - 1; ++r) waitRecvOrThrow(*in, timeout);
  for (int r = 0; r < size_ - 1; ++r) waitSendOrThrow(*out, timeout);
  foldInRankOrder(all, bytes, size_, buf, op);  // every rank computes the same bits
}

void GlooCollectives::allreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  if (buf.count == 0 || size_ == 1) return;
  if (small_ && SharedSmallOps::fits(buf.bytes())) return small_->allreduce(buf, op, Deadline::after(timeout));
  if (readsPeerMemory(buf)) return sameHostAllreduce(buf, op, tag, timeout);
  if (static_cast<size_t>(size_ - 1) * buf.bytes() <= kDirectAllreduceBytes) return directAllreduce(buf, op, tag, timeout);
  const int n = size_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  const RingShape shape(n, buf.count, dtypeSize(buf.dtype));
  const size_t es = shape.es, segs = shape.segs;
  char* base = static_cast<char*>(buf.data);
  const int rsSteps = n - 1;
  GlooWaitSet::Buffer rsSend = buffer(base, buf.bytes());
  GlooWaitSet::Buffer agSend = buffer(base, buf.bytes());
  size_t rsSends = 0, agSends = 0;
  const ReduceKernel kernel = reduceKernel(buf.dtype, op);

  // Reduce-scatter. Step t receives chunk (rank - t - 1) and reduces it segment by segment; each
  // reduced segment is sent on at once (step t + 1, or the allgather's first step after the
  // last), so segments stream through the ring without waiting for whole chunks. The received
  // segments, in step-then-segment order, cycle through kRingWindow scratch segments (small
  // enough to stay in cache between the socket's copy and the reduction): segment j goes to
  // scratch j % kRingWindow, whose next receive is posted once j is reduced.
  size_t segBytes = 0;
  const std::vector<StepPiece> pieces = reduceScatterPieces(shape, rank_, &segBytes);
  const size_t window = std::min(kRingWindow, pieces.size());
  if (ringTmp_.size() < window * segBytes) ringTmp_.resize(window * segBytes);
  std::vector<GlooWaitSet::Buffer> tmp;
  for (size_t w = 0; w < window; ++w) tmp.push_back(buffer(ringTmp_.data() + w * segBytes, segBytes));
  auto postRecv = [&](size_t j) {
    tmp[j % window]->recv(prev, ringSlot(tag, pieces[j].step), 0, pieces[j].at.bytes);
  };
  for (size_t j = 0; j < window; ++j) postRecv(j);
  // Step 0 sends this rank's own chunk, paced (Note [Paced own-chunk sends]): segment k is
  // posted once segment k - kRingWindow was sent.
  GlooWaitSet::Buffer ownSend = buffer(base, buf.bytes());
  size_t ownPosted = 0, ownSends = 0, ownSent = 0;
  auto postOwn = [&](size_t upto) {
    for (; ownPosted < std::min(upto, segs); ++ownPosted) {
      const Piece p = shape.seg(shape.chunk(rank_), ownPosted);
      if (p.bytes == 0) continue;
      if (ownSends - ownSent == kRingWindow) waitSendOrThrow(*ownSend, timeout), ++ownSent;
      ownSend->send(next, ringSlot(tag, 0), p.offset, p.bytes);
      ++ownSends;
    }
  };
  for (size_t j = 0; j < pieces.size(); ++j) {
    postOwn(j + kRingWindow);
    const auto& [t, p] = pieces[j];
    waitRecvOrThrow(*tmp[j % window], timeout);  // piece j: in order (see Note [Ring collectives])
    kernel(base + p.offset, base + p.offset, ringTmp_.data() + (j % window) * segBytes, p.bytes / es);
    if (j + window < pieces.size()) postRecv(j + window);
    if (t + 1 < rsSteps) {
      rsSend->send(next, ringSlot(tag, t + 1), p.offset, p.bytes);
      ++rsSends;
    } else {
      // rank + 1's chunk, complete: an average is divided here, while the segment is in cache,
      // and the allgather spreads the result.
      if (op == ReduceOp::kAvg) divideInPlace(buf.slice(p.offset / es, p.bytes / es), n);
      agSend->send(next, ringSlot(tag, rsSteps), p.offset, p.bytes);
      ++agSends;
    }
  }
  // The allgather writes over chunks the reduce-scatter sent from: those sends must be done.
  postOwn(segs);  // (pieces may be fewer than segs: a chunk of empty segments)
  for (; ownSent < ownSends; ++ownSent) waitSendOrThrow(*ownSend, timeout);
  for (size_t i = 0; i < rsSends; ++i) waitSendOrThrow(*rsSend, timeout);

  std::vector<GlooWaitSet::Buffer> agRecv;
  for (int t = 0; t < n - 1; ++t) agRecv.push_back(buffer(base, buf.bytes()));
  agSends += allgatherPhase(shape, rank_, tag, agRecv, *agSend, timeout);
  for (size_t i = 0; i < agSends; ++i) waitSendOrThrow(*agSend, timeout);
}

void GlooCollectives::fusedAllreduce(const std::vector<BufferView>& bufs, ReduceOp op, uint32_t tag,
                                     std::chrono::milliseconds timeout) {
  if (bufs.empty()) return;
  if (bufs.size() == 1) return allreduce(bufs[0], op, tag, timeout);
  size_t total = 0;
  for (const auto& b : bufs) total += b.bytes();
  if (total == 0 || size_ == 1) return;
  char* flat = scratch(total);
  size_t off = 0;
  for (const auto& b : bufs) {
    if (b.bytes() > 0) std::memcpy(flat + off, b.data, b.bytes());  // empty views may be null
    off += b.bytes();
  }
  const DType dtype = bufs[0].dtype;
  BufferView all{flat, total / dtypeSize(dtype), dtype, Device::cpu()};
  allreduce(all, op, tag, timeout);
  off = 0;
  for (const auto& b : bufs) {
    if (b.bytes() > 0) std::memcpy(b.data, flat + off, b.bytes());
    off += b.bytes();
  }
}

void GlooCollectives::broadcast(BufferView buf, int root, uint32_t tag, std::chrono::milliseconds timeout) {
  if (buf.count == 0 || size_ == 1) return;
  if (small_ && SharedSmallOps::fits(buf.bytes())) return small_->broadcast(buf, root, Deadline::after(timeout));
  const int n = size_;
  const size_t bytes = buf.bytes();
  const uint64_t slot = ringSlot(tag, 0);
  GlooWaitSet::Buffer whole = buffer(buf.data, bytes);
  if (bytes <= kDirectBroadcastBytes) {
    if (rank_ != root) {
      whole->recv(root, slot, 0, bytes);
      waitRecvOrThrow(*whole, timeout);
      return;
    }
    for (int r = 0; r < n; ++r) {
      if (r != root) whole->send(r, slot, 0, bytes);
    }
    for (int r = 0; r < n - 1; ++r) waitSendOrThrow(*whole, timeout);
    return;
  }
  // Pipeline along the ring root, root + 1, ..., root - 1.
  const int pos = mod(rank_ - root, n);
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  const size_t es = dtypeSize(buf.dtype);
  const size_t segs = (bytes + kRingSegmentBytes - 1) / kRingSegmentBytes;
  auto seg = [&](size_t k) { return pieceOf(0, buf.count, es, segs, k); };
  if (pos != 0) {
    for (size_t k = 0; k < segs; ++k) whole->recv(prev, slot, seg(k).offset, seg(k).bytes);
  }
  const bool forward = pos != n - 1;
  for (size_t k = 0; k < segs; ++k) {
    if (pos != 0) waitRecvOrThrow(*whole, timeout);  // segment k (in order within the slot)
    if (forward) whole->send(next, slot, seg(k).offset, seg(k).bytes);
  }
  if (forward) {
    for (size_t k = 0; k < segs; ++k) waitSendOrThrow(*whole, timeout);
  }
}

void GlooCollectives::allgather(BufferView in, BufferView out, uint32_t tag, std::chrono::milliseconds timeout) {
  if (in.count == 0) return;
  const size_t block = in.bytes();
  char* outBytes = static_cast<char*>(out.data);
  char* mine = outBytes + static_cast<size_t>(rank_) * block;
  if (mine != in.data) std::memmove(mine, in.data, block);
  if (size_ == 1) return;
  if (small_ && SharedSmallOps::fits(block)) return small_->allgather(outBytes, block, Deadline::after(timeout));
  ringAllgather(outBytes, block, tag, 0, timeout);
}

void GlooCollectives::ringAllgather(char* out, size_t block, uint32_t tag, int firstStep,
                                    std::chrono::milliseconds timeout) {
  const int n = size_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  GlooWaitSet::Buffer whole = buffer(out, block * static_cast<size_t>(n));
  for (int t = 0; t < n - 1; ++t) {
    const uint64_t slot = ringSlot(tag, firstStep + t);
    whole->recv(prev, slot, static_cast<size_t>(mod(rank_ - t - 1, n)) * block, block);
    whole->send(next, slot, static_cast<size_t>(mod(rank_ - t, n)) * block, block);
    waitRecvOrThrow(*whole, timeout);
    waitSendOrThrow(*whole, timeout);
  }
}

void GlooCollectives::gather(BufferView in, BufferView out, int root, uint32_t tag,
                             std::chrono::milliseconds timeout) {
  if (in.count == 0) return;
  const size_t block = in.bytes();
  if (size_ == 1) {
    if (out.data != in.data) std::memmove(out.data, in.data, block);
    return;
  }
  const uint64_t slot = ringSlot(tag, 0);
  if (rank_ != root) {
    GlooWaitSet::Buffer src = buffer(in.data, block);
    src->send(root, slot, 0, block);
    waitSendOrThrow(*src, timeout);
    return;
  }
  char* outBytes = static_cast<char*>(out.data);
  GlooWaitSet::Buffer whole = buffer(outBytes, block * static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    if (r != root) whole->recv(r, slot, static_cast<size_t>(r) * block, block);
  }
  char* mine = outBytes + static_cast<size_t>(root) * block;
  if (mine != in.data) std::memmove(mine, in.data, block);
  for (int r = 0; r < size_ - 1; ++r) waitRecvOrThrow(*whole, timeout);
}

void GlooCollectives::barrier(uint32_t tag, std::chrono::milliseconds timeout) {
  if (size_ == 1) return;
  std::vector<int32_t> all(static_cast<size_t>(size_), 0);
  int32_t mine = 1;
  allgather(BufferView{&mine, 1, DType::kI32, Device::cpu()}, BufferView{all.data(), all.size(), DType::kI32, Device::cpu()},
            tag, timeout);
}

// Note [Ring reduce-scatter]
// Gloo 0.5 has no options-style reduce-scatter. Ring over unbound buffers, n - 1 steps: at
// step s rank r sends chunk (r - s - 1) mod n to r + 1 (its own input at s = 0, afterwards the
// partial sum it built in the previous step) and receives chunk (r - s - 2) mod n from r - 1,
// which it adds to its own input chunk. After the last step chunk r is complete and is written
// straight into `out`. Each rank sends (n - 1) / n of its input once: the bandwidth-optimal
// volume. The input is never written.
void GlooCollectives::reduceScatter(BufferView in, BufferView out, ReduceOp op, uint32_t tag,
                                    std::chrono::milliseconds timeout) {
  const size_t chunk = out.count;
  if (chunk == 0) return;
  const size_t chunkBytes = out.bytes();
  if (size_ == 1) {
    if (out.data != in.data) std::memmove(out.data, in.data, chunkBytes);
    return;
  }
  if (scratch2_.size() < chunkBytes) scratch2_.resize(chunkBytes);
  char* tmp = scratch(chunkBytes);
  char* acc = scratch2_.data();
  const char* inBytes = static_cast<const char*>(in.data);
  auto inBuf = buffer(in.data, in.bytes());
  auto tmpBuf = buffer(tmp, chunkBytes);
  auto accBuf = buffer(acc, chunkBytes);
  const int n = size_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  const ReduceKernel kernel = reduceKernel(in.dtype, op);
  for (int s = 0; s < n - 1; ++s) {
    const int cSend = mod(rank_ - s - 1, n);
    const int cRecv = mod(rank_ - s - 2, n);
    const uint64_t slot = ringSlot(tag, s);
    tmpBuf->recv(prev, slot, 0, chunkBytes);
    auto& sendBuf = s == 0 ? inBuf : accBuf;
    sendBuf->send(next, slot, s == 0 ? static_cast<size_t>(cSend) * chunkBytes : 0, chunkBytes);
    waitRecvOrThrow(*tmpBuf, timeout);
    waitSendOrThrow(*sendBuf, timeout);
    void* dst = (s == n - 2) ? out.data : acc;
    kernel(dst, inBytes + static_cast<size_t>(cRecv) * chunkBytes, tmp, chunk);
  }
  if (op == ReduceOp::kAvg) divideInPlace(out, size_);
}

}  // namespace ddp::comm
