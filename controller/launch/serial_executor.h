#pragma once
// SerialExecutor: one long-lived thread that runs tasks one at a time, in the order posted.
// LocalLauncher runs every change that starts processes on one (Note [Launcher threads]).
// Thread model: post() and run() may be called from any thread; tasks run on the executor's
// thread. run() from inside a task runs the new task inline (no self-deadlock). The
// destructor drops tasks not yet started and joins the thread; destroy it only when no other
// thread calls in any more.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::controller {

class SerialExecutor {
 public:
  SerialExecutor();
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void post(std::function<void()> task);
  // Runs `task` on the executor's thread and returns its Status; Timeout once `deadline`
  // passes first (the task still runs later).
  Status run(std::function<Status()> task, Deadline deadline);
  bool onExecutorThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::thread thread_;
};

}  // namespace ddp::controller
