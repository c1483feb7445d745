#pragma once
// Internals of GlooBackend shared by its implementation files (gloo_backend.cc: lifecycle,
// executor, abort; gloo_backend_issue.cc: validation, issue, coalescing). Not an API.

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "worker/comm/flight_recorder.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/gloo_collectives.h"

namespace ddp::comm {

struct GlooBackend::Op : OpArgs {  // the call's arguments (op_args.h) and its issue
  uint64_t seq = 0;
  size_t bytes = 0;
  Duration timeout{};
  std::shared_ptr<CompletionWork> work;
};

struct GlooBackend::Task {
  uint64_t seq = 0;
  uint64_t collSeq = 0;  // 0 when no collective is involved
  bool batch = false;
  Duration timeout{};
  std::shared_ptr<CompletionWork> work;
  std::vector<Op> members;  // one for a single op
};

struct GlooBackend::Live {
  std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<CompletionWork>> works;
};

namespace gloo_internal {

// Gloo's end-to-end timeout is a backstop behind the watchdog (which names the op better).
inline constexpr Duration kGlooTimeoutSlack = std::chrono::seconds(2);

OpHeader headerOf(const GlooBackend::Op& op, uint64_t collSeq);
inline bool isCollective(OpType t) { return t != OpType::kSend && t != OpType::kRecv; }
FlightState stateOf(const Status& st);
std::chrono::milliseconds toMs(Duration d);

}  // namespace gloo_internal
}  // namespace ddp::comm
