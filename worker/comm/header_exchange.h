#pragma once
// HeaderExchange: how a communicator's ranks compare op headers (Note [Op header]) before each
// collective. Two implementations: GlooHeaderLane (a thread exchanging them over Gloo ahead of
// the executor, Note [Header lane]) and SharedHeaderExchange (the executor itself, through the
// futex page of ranks on one host, Note [Shared-memory phases]).
// Thread model: post() from the backend under its lock, in collective order; await() from the
// executor, in the same order; stop() from teardown.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/comm/gloo_collectives.h"

namespace ddp::comm {

class HeaderExchange {
 public:
  // A posted header with what post() was told about it.
  struct Item {
    OpHeader header;
    std::string what;
    std::chrono::milliseconds timeout{0};
  };

  virtual ~HeaderExchange() = default;
  // Queues the exchange of `mine` (mine.collSeq must be the next collective number); `what`
  // names the op in errors; `timeout` bounds the exchange's waits.
  virtual void post(const OpHeader& mine, std::string what, std::chrono::milliseconds timeout) = 0;
  // The verdict for `collSeq`: ok, InvalidArgument naming every rank's header when they
  // disagree, Aborted when `abandon()` turned true, Timeout at `deadline`, or the transport's
  // error (Unavailable).
  virtual Status await(uint64_t collSeq, Deadline deadline, const std::function<bool()>& abandon) = 0;
  // Stops; pending exchanges are dropped.
  virtual void stop() = 0;
};

// The verdict on every rank's header (all[r] is rank r's): ok when all equal all[rank], else
// InvalidArgument naming each.
Status compareHeaders(const std::vector<OpHeader>& all, int rank, const std::string& what);

}  // namespace ddp::comm
