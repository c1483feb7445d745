#pragma once
// The hang detector (pure): from what the controller knows about the members of a job's active
// generation (heartbeats, launcher exits, faults the workers reported) and the time, whether the
// generation must be torn down, why, and which ranks are to blame.
//
// Note [Hang verdicts]
// Reasons, in the order they are looked for (the first that applies is the verdict; the names
// are a contract: events, conditions and metrics use them):
//   Exited          the launcher saw a member exit with a failure (non-zero, or a signal the
//                   controller did not send). Culprit: that rank (the earliest, if several).
//   Unresponsive    a member sent no heartbeat for heartbeatSeconds x heartbeatMisses (SIGSTOP,
//                   a frozen host, a cut link). Culprits: every such rank.
//   CollectiveStuck a heartbeating member's oldest unfinished collective is older than
//                   hangSeconds. Culprits: the ranks whose last issued collective on that backend
//                   has a smaller sequence number (they never reached it); waiting: the ranks
//                   whose oldest unfinished collective is that one. When every rank reached it
//                   (a transport fault), there is no culprit: every rank aborts and rejoins.
//   NoProgress      no member finished a step for progressSeconds (counted from the later of the
//                   generation's start and the last step). Culprits: the ranks at the lowest
//                   step when ranks differ; none when all are at the same step.
//   CollectiveFailed a member left the generation on its own (a collective failed or passed its
//                   deadline, and the worker aborted its communicator and asked to rejoin), and
//                   `settle` passed without an exit that explains it (Note [Blaming the right
//                   rank] in job_decision.h: a killed rank's peers fail first). No culprit.
// Since heartbeatSeconds x heartbeatMisses < hangSeconds (the spec validator enforces it), a
// stopped rank is named Unresponsive before its waiting peers could be blamed for being stuck.
// Straggler is an event, not a verdict: a rank that the waiting ranks have waited on for more
// than half of hangSeconds (one event per rank and collective; the caller deduplicates).
// Collective ages are as of the heartbeat that reported them, plus the time since.
// Thread model: pure functions over plain values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/protocol/heartbeat_parts.h"

namespace ddp::controller {

enum class FaultReason { kExited, kUnresponsive, kCollectiveStuck, kNoProgress, kCollectiveFailed };
// "Exited", "Unresponsive", "CollectiveStuck", "NoProgress", "CollectiveFailed".
const char* faultReasonName(FaultReason r);

// One backend's view in a heartbeat (common/protocol/heartbeat_parts.h).
using protocol::CollectiveView;

struct MemberHealth {
  int rank = 0;
  std::string workerId;
  bool finished = false;            // sent its final heartbeat (succeeded or stopped)
  bool exitedWithFailure = false;   // the launcher saw it fail (not a kill the controller sent)
  std::string exitMessage;
  TimePoint exitedAt{};
  TimePoint lastHeartbeat{};        // last sign of life (heartbeat, or the generation's start)
  int64_t step = 0;
  TimePoint stepChangedAt{};
  std::vector<CollectiveView> collectives;  // from the last heartbeat
  bool leftOnItsOwn = false;        // asked to rejoin after a fault of its own
  std::string leftMessage;
  TimePoint leftAt{};
};

struct HangConfig {
  Duration heartbeatWindow = std::chrono::seconds(5);  // heartbeatSeconds x heartbeatMisses
  Duration hang = std::chrono::seconds(60);            // hangSeconds
  Duration progress = std::chrono::seconds(600);       // progressSeconds
  Duration settle = std::chrono::seconds(1);           // the controller's: JobTimings::exitSettle
};

struct HangVerdict {
  FaultReason reason = FaultReason::kExited;
  std::vector<int> culprits;  // ranks to replace (possibly none: every rank rejoins)
  std::vector<int> waiting;   // CollectiveStuck: the ranks waiting in the collective
  std::string message;        // names the rank(s); for CollectiveStuck the op, seq and seconds
};

struct Straggler {
  int rank = 0;
  std::string backend;
  int64_t seq = 0;
  std::string message;
};

struct HangReport {
  std::optional<HangVerdict> verdict;
  std::vector<Straggler> stragglers;
};

// `members` are the active generation's, one per rank; `generationStart` is when it closed.
HangReport detectHang(const std::vector<MemberHealth>& members, const HangConfig& config, TimePoint generationStart,
                      TimePoint now);

}  // namespace ddp::controller
