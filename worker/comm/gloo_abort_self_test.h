#pragma once
// Start-up self-test of GlooBackend::abort (Note [Abort] in gloo_backend.h): whether an abort
// really releases a thread blocked inside Gloo. That depends on gloo_transport_abort.cc reaching
// into Gloo's private TCP context layout (Note [Reaching the transport context] there); a Gloo
// build where that no longer works only degrades to closing sockets, which may leave local
// waits blocked until Gloo's own timeout. Run this once at start-up to find out.
//
// Thread model: runGlooAbortSelfTest blocks the caller and may be called from any thread, also
// concurrently (each call has its own store and backends). It starts and joins its own threads:
// one to connect rank 0 while the caller connects rank 1, one to tear rank 1 down; plus the
// threads of the two GlooBackends it creates (see gloo_backend.h), all joined before it returns.

#include <string>

#include "common/clock.h"

namespace ddp::comm {

inline constexpr Duration kDefaultAbortSelfTestBound = std::chrono::seconds(1);
// Connecting the loopback pair; a setup that takes longer is reported as a setup error.
inline constexpr Duration kAbortSelfTestConnectTimeout = std::chrono::seconds(3);

struct AbortSelfTestResult {
  // True when abort released the blocked op within the bound.
  bool reliable = false;
  // Seconds from abort() until the thread blocked in Gloo had left it (measured even when it
  // took longer than the bound; 0 when the test could not get that far).
  double releaseSeconds = 0;
  // What happened, in one sentence: "a blocked recv was released 0.004 s after abort", why
  // abort is unreliable, or the setup error.
  std::string detail;
};

// Builds a 2-rank GlooBackend pair in this process over loopback (127.0.0.1, an InMemoryStore),
// blocks a recv on rank 1 that rank 0 never matches, aborts rank 1's backend and checks that
// the recv fails with Aborted and that the thread blocked in Gloo's wait is released within
// `bound` (Note [Abort self-test] in the .cc). Never hangs: connecting has a 3 s deadline and
// the recv a short timeout, so even an abort that releases nothing is cleaned up by Gloo's own
// timeout; the whole call takes at most about connect + max(bound, 1 s) + 2 s.
// Logs at Error when abort is found unreliable or the test could not run (reliable is then
// false and `detail` says which), at Info otherwise.
AbortSelfTestResult runGlooAbortSelfTest(Duration bound = kDefaultAbortSelfTestBound);

}  // namespace ddp::comm
