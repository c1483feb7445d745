#pragma once
// GlooOptions: configuration of one GlooBackend (one communicator generation).
// Thread model: plain value.

#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/thread_priority.h"
#include "worker/comm/flight_recorder.h"
#include "worker/comm/types.h"
#include "worker/comm/watchdog.h"

namespace ddp::comm {

inline constexpr Duration kDefaultGlooConnectTimeout = std::chrono::seconds(60);

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // Store namespace of this communicator generation (Note [Store prefix per generation]):
  // e.g. "job/gen3". Never reuse a prefix within one store.
  std::string prefix = "default";
  // Address the TCP pairs bind to and advertise.
  std::string hostname = "127.0.0.1";
  // Default op timeout (OpOptions::timeout overrides per op).
  Duration timeout = kDefaultOpTimeout;
  // Rendezvous through the store plus TCP connection setup.
  Duration connectTimeout = kDefaultGlooConnectTimeout;
  // How often the watchdog looks for overdue ops (real time).
  Duration watchdogPoll = kDefaultWatchdogPoll;
  size_t flightRecords = kDefaultFlightRecords;
  // Log abort() with the flight record (a Warning). Off only where the abort is deliberate (the
  // abort self-test), so that a worker's log does not report a fault that did not happen.
  bool logAbort = true;
  // Clock of deadlines and the watchdog; nullptr means the system clock. Must outlive the backend.
  const Clock* clock = nullptr;
  // Scheduling of every thread that enters Gloo: the backend's own, Gloo's (which inherit it),
  // and the caller's while it connects or tears down (Note [Comm thread priority]).
  CommThreadPriority commThreadPriority = CommThreadPriority::kAuto;
  // Large allreduces read peers' memory when every rank runs on this host in one PID namespace
  // and may (Note [Same-host allreduce] in worker/comm/cross_memory.h); false: always TCP.
  bool sameHostMemory = true;

  // InvalidArgument naming the field and the reason.
  Status validate() const;
};

}  // namespace ddp::comm
