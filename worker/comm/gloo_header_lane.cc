#include "worker/comm/gloo_header_lane.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <exception>
#include <functional>
#include <vector>

#include "common/thread_priority.h"

namespace ddp::comm {
namespace {

// Slots of header exchanges: a prefix no Gloo algorithm and no other lane of ours uses.
constexpr uint64_t kHeaderSlotPrefix = 0xD2ull << 56;

}  // namespace

Status compareHeaders(const std::vector<OpHeader>& all, int rank, const std::string& what) {
  bool agree = true;
  for (const auto& h : all) agree = agree && (h == all[static_cast<size_t>(rank)]);
  if (agree) return Status::ok();
  std::string msg = what + ": ranks disagree on the op (every rank must issue the same collectives "
                           "with the same sizes):";
  for (size_t r = 0; r < all.size(); ++r) msg += " rank " + std::to_string(r) + " has " + all[r].describe() + ";";
  return invalidArgument(msg);
}

GlooHeaderLane::GlooHeaderLane(std::shared_ptr<::gloo::Context> context, std::shared_ptr<GlooWaitSet> waits,
                               CommThreadPriority priority)
    : context_(std::move(context)), waits_(std::move(waits)), rank_(context_->rank), size_(context_->size) {
  thread_ = std::thread([this, priority] {
    setThreadName("ddp-gloo-hdr");
    (void)applyCommThreadPriority(priority);  // Note [Comm thread priority]
    run();
  });
}

GlooHeaderLane::~GlooHeaderLane() { stop(); }

void GlooHeaderLane::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GlooHeaderLane::post(const OpHeader& mine, std::string what, std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Item{mine, std::move(what), timeout});
  }
  cv_.notify_all();
}

Status GlooHeaderLane::await(uint64_t collSeq, Deadline deadline, const std::function<bool()>& abandon) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = verdicts_.find(collSeq);
    if (it != verdicts_.end()) {
      Status st = std::move(it->second);
      verdicts_.erase(it);
      return st;
    }
    // Not started by the lane yet (it is idle or busy with an earlier header): exchange it on
    // this thread, saving a thread hand-off. Each header has its own slot, so exchanges need
    // not happen in order.
    for (auto q = queue_.begin(); q != queue_.end(); ++q) {
      if (q->header.collSeq != collSeq) continue;
      Item item = std::move(*q);
      queue_.erase(q);
      lock.unlock();
      return exchange(item);
    }
    if (stopping_) return abortedError("header exchange stopped");
    if (abandon) {
      // Called without our lock: `abandon` may take the caller's locks, and the caller may hold
      // them while it calls post().
      lock.unlock();
      const bool give = abandon();
      lock.lock();
      if (give) return abortedError("header exchange abandoned");
      if (verdicts_.count(collSeq)) continue;
    }
    if (deadline.expired()) return timeoutError("header exchange of collective #" + std::to_string(collSeq) + " timed out");
    cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

Status GlooHeaderLane::exchange(const Item& item) {
  if (size_ == 1) return Status::ok();
  OpHeader mine = item.header;
  std::vector<OpHeader> all(static_cast<size_t>(size_));
  all[rank_] = mine;
  const uint64_t slot = kHeaderSlotPrefix | (item.header.collSeq & ((1ull << 56) - 1));
  try {
    auto out = waits_->create(*context_, &mine, sizeof(OpHeader));
    auto in = waits_->create(*context_, all.data(), sizeof(OpHeader) * all.size());
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      in->recv(p, slot, sizeof(OpHeader) * p, sizeof(OpHeader));
      out->send(p, slot);
    }
    for (int p = 0; p < size_ - 1; ++p) {
      if (!in->waitRecv(item.timeout)) return abortedError(item.what + ": header exchange aborted");
    }
    for (int p = 0; p < size_ - 1; ++p) {
      if (!out->waitSend(item.timeout)) return abortedError(item.what + ": header exchange aborted");
    }
  } catch (const std::exception& e) {
    return unavailable(item.what + ": transport error during the header exchange: " + e.what());
  }
  return compareHeaders(all, rank_, item.what);
}

void GlooHeaderLane::run() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st = exchange(item);
    {
      std::lock_guard<std::mutex> lock(mu_);
      verdicts_[item.header.collSeq] = std::move(st);
    }
    cv_.notify_all();
  }
}

}  // namespace ddp::comm

