#include "worker/comm/gloo_p2p.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <exception>
#include <vector>

#include "common/thread_priority.h"

namespace ddp::comm {
namespace {

constexpr uint64_t kP2pSlotPrefix = 0xD1ull << 56;
uint64_t p2pSlot(int tag, bool data) {
  return kP2pSlotPrefix | (static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 1) | (data ? 1u : 0u);
}

struct P2pHeader {
  uint64_t bytes = 0;
  uint64_t dtype = 0;
};

}  // namespace

struct GlooP2p::Pending {
  P2pRequest req;
  P2pHeader header;
  GlooWaitSet::Buffer headerBuf;
  GlooWaitSet::Buffer dataBuf;
};

GlooP2p::GlooP2p(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits,
                 CommThreadPriority priority)
    : context_(std::move(context)), waits_(std::move(waits)) {
  sends_.thread = std::thread([this, priority] {
    setThreadName("ddp-gloo-send");
    (void)applyCommThreadPriority(priority);  // Note [Comm thread priority]
    run(sends_);
  });
  recvs_.thread = std::thread([this, priority] {
    setThreadName("ddp-gloo-recv");
    (void)applyCommThreadPriority(priority);
    run(recvs_);
  });
}

GlooP2p::~GlooP2p() { stop(); }

void GlooP2p::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sends_.thread.joinable()) sends_.thread.join();
  if (recvs_.thread.joinable()) recvs_.thread.join();
}

bool GlooP2p::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sends_.inFlight || recvs_.inFlight || !sends_.queue.empty() || !recvs_.queue.empty();
}

Status GlooP2p::post(P2pRequest req) {
  auto p = std::make_unique<Pending>();
  p->req = std::move(req);
  const P2pRequest& r = p->req;
  try {
    p->headerBuf = waits_->create(*context_, &p->header, sizeof(P2pHeader));
    if (r.isSend) {
      p->header.bytes = r.buf.bytes();
      p->header.dtype = static_cast<uint64_t>(r.buf.dtype);
      p->headerBuf->send(r.peer, p2pSlot(r.tag, false));
      if (r.buf.bytes() > 0) {
        p->dataBuf = waits_->create(*context_, r.buf.data, r.buf.bytes());
        p->dataBuf->send(r.peer, p2pSlot(r.tag, true));
      }
    } else {
      p->headerBuf->recv(r.peer, p2pSlot(r.tag, false));
    }
  } catch (const std::exception& e) {
    return unavailable(std::string(r.isSend ? "send to" : "recv from") + " rank " + std::to_string(r.peer) +
                       " tag " + std::to_string(r.tag) + ": " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Lane& lane = p->req.isSend ? sends_ : recvs_;
    lane.queue.push_back(std::move(p));
  }
  cv_.notify_all();
  return Status::ok();
}

Status GlooP2p::complete(Pending& p) {
  const P2pRequest& r = p.req;
  const std::string what = std::string(r.isSend ? "send to" : "recv from") + " rank " + std::to_string(r.peer) +
                           " tag " + std::to_string(r.tag);
  try {
    if (r.isSend) {
      if (!p.headerBuf->waitSend(r.timeout)) return abortedError(what + ": aborted");
      if (p.dataBuf && !p.dataBuf->waitSend(r.timeout)) return abortedError(what + ": aborted");
      return Status::ok();
    }
    if (!p.headerBuf->waitRecv(r.timeout)) return abortedError(what + ": aborted");
    const bool agree = p.header.bytes == r.buf.bytes() && p.header.dtype == static_cast<uint64_t>(r.buf.dtype);
    if (p.header.bytes == 0) {
      return agree ? Status::ok() : invalidArgument(what + ": the sender sent 0 bytes, this recv expects " +
                                                    std::to_string(r.buf.bytes()));
    }
    std::vector<char> drain;
    void* dst = r.buf.data;
    if (!agree) {
      drain.resize(p.header.bytes);
      dst = drain.data();
    }
    p.dataBuf = waits_->create(*context_, dst, p.header.bytes);
    p.dataBuf->recv(r.peer, p2pSlot(r.tag, true));
    if (!p.dataBuf->waitRecv(r.timeout)) return abortedError(what + ": aborted");
    if (!agree) {
      const DType sentType = static_cast<DType>(p.header.dtype);
      return invalidArgument(what + ": size mismatch: the sender sent " + std::to_string(p.header.bytes) +
                             " bytes of " + dtypeName(sentType) + ", this recv expects " +
                             std::to_string(r.buf.bytes()) + " bytes of " + dtypeName(r.buf.dtype));
    }
    return Status::ok();
  } catch (const std::exception& e) {
    return unavailable(what + ": " + e.what());
  }
}

void GlooP2p::run(Lane& lane) {
  for (;;) {
    std::unique_ptr<Pending> p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !lane.queue.empty(); });
      if (lane.queue.empty()) return;  // stopping and drained
      p = std::move(lane.queue.front());
      lane.queue.pop_front();
      lane.inFlight = true;
    }
    Status st = complete(*p);
    p->req.work->complete(std::move(st));
    p.reset();
    std::lock_guard<std::mutex> lock(mu_);
    lane.inFlight = false;
  }
}

}  // namespace ddp::comm

