#include "worker/comm/cross_memory_allreduce.h"

#include <algorithm>

#include "worker/comm/reduce_kernels.h"

namespace ddp::comm {
namespace {

// Elements [begin, end) of chunk c of `count` among n.
struct Range {
  size_t begin = 0, end = 0;
};
Range chunkOf(size_t count, int n, int c) {
  return {count * static_cast<size_t>(c) / static_cast<size_t>(n), count * static_cast<size_t>(c + 1) / static_cast<size_t>(n)};
}

}  // namespace

void CrossMemoryAllreduce::reduceOwnChunk(BufferView buf, ReduceOp op, const std::vector<uint64_t>& addr) {
  const size_t es = dtypeSize(buf.dtype);
  const Range mine = chunkOf(buf.count, size_, rank_);
  const size_t segElems = std::max<size_t>(1, kCrossMemorySegmentBytes / es);
  if (segment_.size() < segElems * es) segment_.resize(segElems * es);
  const ReduceKernel kernel = reduceKernel(buf.dtype, op);
  char* base = static_cast<char*>(buf.data);
  for (size_t at = mine.begin; at < mine.end; at += segElems) {
    const size_t elems = std::min(segElems, mine.end - at);
    char* own = base + at * es;
    for (int k = 1; k < size_; ++k) {
      const int peer = (rank_ + k) % size_;
      memory_->read(peer, addr[static_cast<size_t>(peer)] + at * es, segment_.data(), elems * es);
      kernel(own, own, segment_.data(), elems);
    }
    if (op == ReduceOp::kAvg) divideInPlace(buf.slice(at, elems), size_);
  }
}

void CrossMemoryAllreduce::run(BufferView buf, ReduceOp op, const Exchange& exchange) {
  std::vector<uint64_t> addr(static_cast<size_t>(size_), 0);
  addr[static_cast<size_t>(rank_)] = reinterpret_cast<uint64_t>(buf.data);
  exchange(addr, 0);
  reduceOwnChunk(buf, op, addr);
  std::vector<uint64_t> flags(static_cast<size_t>(size_), 1);
  exchange(flags, 1);  // every chunk is reduced
  const size_t es = dtypeSize(buf.dtype);
  for (int k = 1; k < size_; ++k) {
    const int owner = (rank_ + k) % size_;
    const Range c = chunkOf(buf.count, size_, owner);
    if (c.end == c.begin) continue;
    memory_->read(owner, addr[static_cast<size_t>(owner)] + c.begin * es, static_cast<char*>(buf.data) + c.begin * es,
                 (c.end - c.begin) * es);
  }
  exchange(flags, 2);  // no peer reads this buffer any more
}

}  // namespace ddp::comm
