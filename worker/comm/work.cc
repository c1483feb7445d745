#include "worker/comm/work.h"

namespace ddp::comm {

CompletionWork::CompletionWork(uint64_t seq, OpType type, size_t bytes, Duration timeout)
    : seq_(seq), type_(type), bytes_(bytes), timeout_(timeout) {}

Status CompletionWork::wait(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline.at(), [&] { return done_; })) {
    return timeoutError(std::string(opTypeName(type_)) + " seq " + std::to_string(seq_) + " (" +
                        std::to_string(bytes_) + " bytes) not complete by the caller's deadline");
  }
  return status_;
}

Status CompletionWork::wait() { return wait(Deadline::after(timeout_)); }

bool CompletionWork::isCompleted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status CompletionWork::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

bool CompletionWork::complete(Status status) {
  std::vector<std::function<void(const Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    done_ = true;
    status_ = std::move(status);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& cb : callbacks) cb(status_);
  return true;
}

void CompletionWork::onComplete(std::function<void(const Status&)> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(status_);
}

WorkPtr completedWork(Status status, OpType type, uint64_t seq, size_t bytes) {
  auto w = std::make_shared<CompletionWork>(seq, type, bytes, kDefaultOpTimeout);
  w->complete(std::move(status));
  return w;
}

}  // namespace ddp::comm
