#include "controller/launch/serial_executor.h"

#include <memory>
#include <optional>

namespace ddp::controller {

SerialExecutor::SerialExecutor() : thread_([this] { loop(); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    tasks_.clear();
  }
  cv_.notify_all();
  thread_.join();
}

void SerialExecutor::post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

Status SerialExecutor::run(std::function<Status()> task, Deadline deadline) {
  if (onExecutorThread()) return task();
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Status> status;  // guarded by mu
  };
  auto outcome = std::make_shared<Outcome>();
  post([outcome, task = std::move(task)] {
    Status s = task();
    std::lock_guard<std::mutex> lock(outcome->mu);
    outcome->status = std::move(s);
    outcome->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(outcome->mu);
  if (!outcome->cv.wait_until(lock, deadline.at(), [&] { return outcome->status.has_value(); })) {
    return timeoutError("the launcher's spawner thread did not finish the request in time");
  }
  return *outcome->status;
}

void SerialExecutor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace ddp::controller
