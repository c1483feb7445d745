#pragma once
// Internal to ddp::http::Server: the threads that run the Handler, one request at a time each,
// in arrival order.
// Thread model: start() starts `threads` threads; post() from any thread (the event loop);
// stop() (also the destructor) drops queued requests, waits for running handlers to return and
// joins. The queue is guarded by mu_.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/http/http_server.h"

namespace ddp::http::detail {

struct HandlerTask {
  Request request;
  std::shared_ptr<Responder> responder;
};

// Runs `handler` on the calling thread; an exception becomes a 500 (none crosses the module).
void runHandler(const Handler& handler, Request& request, const std::shared_ptr<Responder>& responder);

class HandlerPool {
 public:
  HandlerPool(int threads, Handler handler);
  ~HandlerPool();
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  void start();
  void post(HandlerTask task);
  void stop();
  // True on one of this pool's threads.
  bool onPoolThread() const;
  const Handler& handler() const { return handler_; }

 private:
  void run();

  const int threads_;
  const Handler handler_;
  std::vector<std::thread> workers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HandlerTask> queue_;  // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
};

}  // namespace ddp::http::detail
