#include "worker/control/stop_signal.h"

#include <signal.h>

namespace ddp::runtime {
namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
void onSignal(int) { g_stop.store(true, std::memory_order_relaxed); }
}  // namespace

const std::atomic<bool>& installStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  // A write to a socket whose peer closed it must fail with EPIPE, not kill the worker: Gloo's
  // TCP pairs write with writev (no MSG_NOSIGNAL), and a peer that aborts its communicator (a
  // recovery, a membership change) closes its end while this rank may still be writing. The
  // write's error then fails the collective, and the worker rejoins (Note [Worker generations]).
  ::signal(SIGPIPE, SIG_IGN);
  return g_stop;
}

void requestStop() { g_stop.store(true); }

}  // namespace ddp::runtime
