#include "worker/comm/gloo_abort_self_test.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/log.h"
#include "common/store/in_memory_store.h"
#include "worker/comm/gloo_backend.h"

// Note [Abort self-test]
// GlooBackend::abort() completes every pending Work with Aborted itself, before it touches the
// transport, so a Work failing with Aborted says nothing about Gloo. What the transport signal
// (gloo_transport_abort.cc) has to achieve is that the thread blocked in Gloo's wait (here the
// backend's p2p recv thread, in UnboundBuffer::waitRecv) returns. The backend's destructor
// joins that thread, so "released" is measured as: abort() called -> rank 1's backend
// destroyed. The destructor runs on a helper thread so the bound can be checked while it is
// still blocked; the helper is always joined: the recv's Gloo timeout (op timeout plus the
// backend's slack of 2 s) ends the wait even when the signal did not, so a failed abort costs
// a few seconds, never a hang. The op timeout is max(bound, 1 s), so neither the watchdog nor
// Gloo's timeout can release the recv within `bound` of the abort and pass for it.
// Rank 0 is a real peer that never posts the matching send; it is destroyed last.

namespace ddp::comm {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr Duration kMinOpTimeout = std::chrono::seconds(1);
// Waiting for the executor to post the recv (it is idle, so this is fast).
constexpr Duration kPostTimeout = std::chrono::seconds(1);
// After the post, time for the recv thread to enter Gloo's wait. Not a correctness condition:
// a recv signalled before it waits fails at once all the same.
constexpr auto kSettle = std::chrono::milliseconds(10);
constexpr int kSelfTestTag = 0x5e1f;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

std::string seconds(Duration d) { return seconds(std::chrono::duration<double>(d).count()); }

double secondsSince(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

AbortSelfTestResult setupError(const std::string& what) {
  AbortSelfTestResult r;
  r.detail = "Gloo abort self-test could not run: " + what;
  return r;
}

GlooOptions pairOptions(int rank, Duration opTimeout) {
  GlooOptions o;
  o.rank = rank;
  o.size = 2;
  o.prefix = "gloo-abort-self-test";  // the store is this call's own
  o.hostname = "127.0.0.1";
  o.timeout = opTimeout;
  o.logAbort = false;  // the abort is the test, not a fault
  o.connectTimeout = kAbortSelfTestConnectTimeout;
  return o;
}

// Connects ranks 0 and 1 (each create() blocks until both have joined: rank 0 on a thread).
Result<std::array<std::unique_ptr<GlooBackend>, 2>> connectPair(Duration opTimeout) {
  InMemoryStore store;  // only used during create()
  std::optional<Result<std::unique_ptr<GlooBackend>>> made0;
  std::thread t0([&] { made0.emplace(GlooBackend::create(pairOptions(0, opTimeout), store)); });
  Result<std::unique_ptr<GlooBackend>> made1 = GlooBackend::create(pairOptions(1, opTimeout), store);
  t0.join();
  if (!made0->isOk()) return made0->status().withContext("connecting rank 0 over loopback");
  if (!made1.isOk()) return made1.status().withContext("connecting rank 1 over loopback");
  return std::array<std::unique_ptr<GlooBackend>, 2>{std::move(**made0), std::move(*made1)};
}

// Polls until `work` is running on `backend` (posted to Gloo by the executor).
Status awaitPosted(const GlooBackend& backend, const Work& work) {
  const Deadline deadline = Deadline::after(kPostTimeout);
  while (!deadline.expired()) {
    if (work.isCompleted()) return internalError("the recv completed before any abort: " + work.status().toString());
    for (const FlightRecord& r : backend.flightRecorder().snapshot()) {
      if (r.seq == work.seq() && r.state == FlightState::kRunning) return Status::ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return timeoutError("the recv was not posted within " + formatDuration(kPostTimeout));
}

// Destroys `backend` on a helper thread; returns when it is gone (always), and whether that
// happened by `by`. `destroyedAt` is when the destructor returned.
bool destroyBy(std::unique_ptr<GlooBackend> backend, SteadyClock::time_point by, SteadyClock::time_point* destroyedAt) {
  std::mutex mu;
  std::condition_variable cv;
  bool destroyed = false;  // guarded by mu
  std::thread destroyer([&] {
    backend.reset();  // joins the backend's threads, the one blocked in Gloo included
    std::lock_guard<std::mutex> lock(mu);
    destroyed = true;
    *destroyedAt = SteadyClock::now();
    cv.notify_all();
  });
  bool inTime;
  {
    std::unique_lock<std::mutex> lock(mu);
    inTime = cv.wait_until(lock, by, [&] { return destroyed; });
  }
  destroyer.join();  // bounded by the recv's Gloo timeout (Note [Abort self-test])
  return inTime;
}

AbortSelfTestResult runSelfTest(Duration bound) {
  if (bound <= Duration::zero()) return setupError("the bound must be positive, got " + formatDuration(bound));
  const Duration opTimeout = std::max(bound, kMinOpTimeout);
  auto pair = connectPair(opTimeout);
  if (!pair.isOk()) return setupError(pair.status().toString());
  std::unique_ptr<GlooBackend> rank0 = std::move((*pair)[0]);
  std::unique_ptr<GlooBackend> rank1 = std::move((*pair)[1]);

  float slot = 0.f;
  OpOptions recvOptions;
  recvOptions.timeout = opTimeout;
  WorkPtr recv = rank1->recv(viewOf(&slot, 1), /*src=*/0, kSelfTestTag, recvOptions);
  if (Status posted = awaitPosted(*rank1, *recv); !posted.isOk()) {
    rank1->abort(abortedError("abort self-test could not start"));
    return setupError(posted.toString());
  }
  std::this_thread::sleep_for(kSettle);

  const SteadyClock::time_point abortAt = SteadyClock::now();
  rank1->abort(abortedError("abort self-test (expected; not a failure)"));
  const Status recvStatus = recv->wait(Deadline::after(bound));
  SteadyClock::time_point destroyedAt{};
  const bool released = destroyBy(std::move(rank1), abortAt + bound, &destroyedAt);
  rank0.reset();

  AbortSelfTestResult r;
  r.releaseSeconds = secondsSince(abortAt, destroyedAt);
  if (recvStatus.code() != StatusCode::kAborted) {
    r.detail = "after abort the blocked recv completed with " + recvStatus.toString() +
               " instead of Aborted: abort is broken";
    return r;
  }
  if (!released) {
    r.detail = "abort did not release a blocked recv within " + seconds(bound) + " (its wait in Gloo ended only " +
               seconds(r.releaseSeconds) + " after abort, at its own timeout): the communicator can only be " +
               "recovered by restarting the process";
    return r;
  }
  r.reliable = true;
  r.detail = "a blocked recv was released " + seconds(r.releaseSeconds) + " after abort";
  return r;
}

}  // namespace

AbortSelfTestResult runGlooAbortSelfTest(Duration bound) {
  AbortSelfTestResult r = runSelfTest(bound);
  if (r.reliable) {
    DDP_LOG(Debug) << "Gloo abort self-test: " << r.detail;
  } else {
    DDP_LOG(Error) << "Gloo abort self-test: abort is NOT known to be reliable: " << r.detail;
  }
  return r;
}

}  // namespace ddp::comm
