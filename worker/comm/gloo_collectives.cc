#include "worker/comm/gloo_collectives.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/transport/unbound_buffer.h>

#include <cstring>

#include "worker/comm/reduce_kernels.h"

namespace ddp::comm {
namespace {

// Calls f(T{}) with an unsigned integer type of the element size: Gloo only needs sizeof(T);
// arithmetic goes through our reduce kernels.
template <typename F>
void withElementType(DType dtype, F&& f) {
  switch (dtypeSize(dtype)) {
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    default: f(uint8_t{}); return;
  }
}

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

GlooCollectives::GlooCollectives(std::shared_ptr<::gloo::Context> context)
    : context_(std::move(context)), rank_(context_->rank), size_(context_->size) {}

char* GlooCollectives::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void GlooCollectives::allreduce(BufferView buf, ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  if (buf.count == 0 || size_ == 1) return;
  ::gloo::AllreduceOptions opts(context_);
  withElementType(buf.dtype, [&](auto t) {
    using T = decltype(t);
    opts.setOutput<T>(static_cast<T*>(buf.data), buf.count);
  });
  opts.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction(reduceKernel(buf.dtype, op));
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::allreduce(opts);
  if (op == ReduceOp::kAvg) divideInPlace(buf, size_);
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
  ::gloo::BroadcastOptions opts(context_);
  withElementType(buf.dtype, [&](auto t) {
    using T = decltype(t);
    opts.setOutput<T>(static_cast<T*>(buf.data), buf.count);
  });
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::broadcast(opts);
}

void GlooCollectives::allgather(BufferView in, BufferView out, uint32_t tag, std::chrono::milliseconds timeout) {
  if (in.count == 0) return;
  char* slot = static_cast<char*>(out.data) + static_cast<size_t>(rank_) * in.bytes();
  if (size_ == 1) {
    if (slot != in.data) std::memmove(slot, in.data, in.bytes());
    return;
  }
  ::gloo::AllgatherOptions opts(context_);
  withElementType(in.dtype, [&](auto t) {
    using T = decltype(t);
    // In-place (input already at this rank's slot of the output): output only.
    if (slot != in.data) opts.setInput<T>(static_cast<T*>(in.data), in.count);
    opts.setOutput<T>(static_cast<T*>(out.data), out.count);
  });
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::allgather(opts);
}

void GlooCollectives::gather(BufferView in, BufferView out, int root, uint32_t tag,
                             std::chrono::milliseconds timeout) {
  if (in.count == 0) return;
  if (size_ == 1) {
    if (out.data != in.data) std::memmove(out.data, in.data, in.bytes());
    return;
  }
  ::gloo::GatherOptions opts(context_);
  withElementType(in.dtype, [&](auto t) {
    using T = decltype(t);
    opts.setInput<T>(static_cast<T*>(in.data), in.count);
    if (rank_ == root) opts.setOutput<T>(static_cast<T*>(out.data), out.count);
  });
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::gather(opts);
}

void GlooCollectives::barrier(uint32_t tag, std::chrono::milliseconds timeout) {
  if (size_ == 1) return;
  ::gloo::BarrierOptions opts(context_);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  ::gloo::barrier(opts);
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
  auto inBuf = context_->createUnboundBuffer(in.data, in.bytes());
  auto tmpBuf = context_->createUnboundBuffer(tmp, chunkBytes);
  auto accBuf = context_->createUnboundBuffer(acc, chunkBytes);
  const int n = size_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  const ReduceKernel kernel = reduceKernel(in.dtype, op);
  for (int s = 0; s < n - 1; ++s) {
    const int cSend = ((rank_ - s - 1) % n + n) % n;
    const int cRecv = ((rank_ - s - 2) % n + n) % n;
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
