#include "worker/comm/watchdog.h"

#include <vector>

namespace ddp::comm {

Watchdog::Watchdog(const Clock& clock, OnTimeout onTimeout, Duration pollInterval)
    : clock_(clock), onTimeout_(std::move(onTimeout)), pollInterval_(pollInterval) {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Watchdog::watch(WatchedOp op) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t seq = op.seq;
  ops_[seq] = std::move(op);
}

void Watchdog::unwatch(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.erase(seq);
}

size_t Watchdog::numWatched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

Status Watchdog::timeoutStatus(const WatchedOp& op) {
  return timeoutError(op.op + " seq " + std::to_string(op.seq) + " (" + std::to_string(op.bytes) +
                      " bytes) on group " + op.group + " did not complete within " +
                      formatDuration(op.timeout) + "; the watchdog aborted the communicator");
}

int Watchdog::checkNow() {
  std::lock_guard<std::mutex> fire(fireMu_);
  std::vector<WatchedOp> overdue;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return 0;
    const TimePoint now = clock_.now();
    for (auto it = ops_.begin(); it != ops_.end();) {
      if (it->second.deadline <= now) {
        overdue.push_back(std::move(it->second));
        it = ops_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& op : overdue) onTimeout_(op, timeoutStatus(op));
  return static_cast<int>(overdue.size());
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, pollInterval_, [&] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    (void)checkNow();
    lock.lock();
  }
}

}  // namespace ddp::comm
