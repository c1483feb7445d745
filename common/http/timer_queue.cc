#include "common/http/timer_queue.h"

#include <vector>

namespace ddp::http {

TimerQueue::TimerQueue() : thread_([this] { run(); }) {}

TimerQueue::~TimerQueue() { stop(); }

TimerQueue::Id TimerQueue::schedule(TimePoint at, std::function<void()> fn) {
  bool earliest = false;
  Id id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return 0;
    id = nextId_++;
    auto it = queue_.emplace(std::make_pair(at, id), std::move(fn)).first;
    earliest = it == queue_.begin();
    when_.emplace(id, at);
  }
  if (earliest) cv_.notify_one();
  return id;
}

bool TimerQueue::cancel(Id id) {
  std::function<void()> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto w = when_.find(id);
  if (w == when_.end()) return false;
  auto it = queue_.find({w->second, id});
  dropped = std::move(it->second);
  queue_.erase(it);
  when_.erase(w);
  return true;
}

void TimerQueue::stop(bool runPending) {
  std::map<std::pair<TimePoint, Id>, std::function<void()>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
    when_.clear();
  }
  if (runPending) {
    for (auto& [key, fn] : left) fn();
  }
}

size_t TimerQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void TimerQueue::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const TimePoint at = queue_.begin()->first.first;
    if (SystemClock::instance().now() < at) {
      cv_.wait_until(lock, at);
      continue;
    }
    auto node = queue_.extract(queue_.begin());
    when_.erase(node.key().second);
    lock.unlock();
    node.mapped()();
    node.mapped() = nullptr;  // its captures are released outside the lock
    lock.lock();
  }
}

}  // namespace ddp::http
