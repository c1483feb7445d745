// runAbortUnderDeadline: Note [NCCL abort deadline] in nccl_backend_cuda.cc.
#include "worker/comm/nccl_backend_abort.h"

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/log.h"
#include "common/thread_priority.h"

namespace ddp::comm {
namespace {

// The helper's completion, shared with the thread that waits for it.
struct AbortCall {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu
};

std::string secondsText(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

AbortOutcome runAbortUnderDeadline(std::function<void()> abortCall, Duration timeout,
                                   const std::function<void(const std::string&)>& onHung, const std::string& what) {
  auto call = std::make_shared<AbortCall>();
  try {
    std::thread([abortCall, call] {
      setThreadName("ddp-nccl-abort");
      abortCall();
      std::lock_guard<std::mutex> lock(call->mu);
      call->done = true;
      call->cv.notify_all();
    }).detach();  // Note [NCCL abort deadline]: never joined
  } catch (const std::system_error& e) {
    DDP_LOG(Warning) << what << ": no thread for it (" << e.what() << "); calling it without a deadline";
    abortCall();
    return AbortOutcome::kInline;
  }
  bool done = false;
  {
    std::unique_lock<std::mutex> lock(call->mu);
    done = call->cv.wait_for(lock, timeout, [&] { return call->done; });
  }
  if (done) return AbortOutcome::kReturned;
  onHung(what + " did not return within " + secondsText(timeout));
  return AbortOutcome::kHung;
}

}  // namespace ddp::comm
