#include "common/http/http_handler_pool.h"

#include <exception>

#include "common/log.h"

namespace ddp::http::detail {

HandlerPool::HandlerPool(int threads, Handler handler) : threads_(threads), handler_(std::move(handler)) {}

HandlerPool::~HandlerPool() { stop(); }

void HandlerPool::start() {
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { run(); });
}

void HandlerPool::post(HandlerTask task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // dropped: its responder answers nothing (the server is stopping)
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void HandlerPool::stop() {
  std::deque<HandlerTask> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

bool HandlerPool::onPoolThread() const {
  const auto self = std::this_thread::get_id();
  for (const auto& t : workers_) {
    if (t.get_id() == self) return true;
  }
  return false;
}

void HandlerPool::run() {
  while (true) {
    HandlerTask task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    runHandler(handler_, task.request, task.responder);
  }
}

void runHandler(const Handler& handler, Request& request, const std::shared_ptr<Responder>& responder) {
  // No exception crosses the module boundary: a throwing handler answers 500.
  try {
    handler(request, responder);
  } catch (const std::exception& e) {
    DDP_LOG(Error) << "http handler for " << request.method << " " << request.path << " threw: " << e.what();
    responder->reply(Response::jsonError(500, std::string("internal error: ") + e.what()));
  } catch (...) {
    DDP_LOG(Error) << "http handler for " << request.method << " " << request.path << " threw";
    responder->reply(Response::jsonError(500, "internal error"));
  }
}

}  // namespace ddp::http::detail
