#pragma once
// ControllerClient: the worker's side of ddp-controller's worker routes (docs/API.md, "Worker
// routes"): registration, the rendezvous assignment (long poll), heartbeats; and the options of
// the HttpStoreClient that reaches the same controller's per-generation store.
//
// Requests: every one carries `Authorization: Bearer <job token>` and runs under the caller's
// deadline: connect, read and write timeouts are capped by the time left. A transport failure
// (no answer: refused, reset, timed out) and a 503 are retried with exponential backoff (50 ms
// doubling to 1 s) until the deadline, then reported as Unavailable naming the controller URL,
// the route and the attempts. Every worker route is safe to repeat (registration is idempotent,
// the assignment is read-only, a repeated heartbeat is just a fresher report), so a request is
// retried even when it may have reached the server.
// Status mapping (the server's "error" text is kept in the message):
//   410 -> Aborted "fenced: stale generation, current G: <why>" (isFenced())
//   409 on the registration -> FailedPrecondition: another live process holds this worker id
//     (Note [Worker incarnations] in controller/jobs/membership/worker_claim.cc); the worker exits
// After its registration every request also carries X-DDP-Incarnation, the nonce the controller
// issued (kept by the client; the same process keeps it across generations).
//   409 on the assignment -> OutOfRange "job finished: state S" (jobFinished(), Note below)
//   401 -> FailedPrecondition; 404 -> NotFound; other 4xx -> InvalidArgument;
//   other 5xx -> Internal; an answer that does not decode -> Internal.
//
// Note [Job finished]
// A worker that asks for an assignment after its job ended gets 409 + {"error", "state"}; it
// exits 0 when the state is Succeeded or Cancelled (docs/API.md). awaitAssignment() returns
// OutOfRange with the message "job finished: state <S>" (kJobFinishedPrefix) so that no other
// failure can be mistaken for it; jobFinished() recognises it and gives the state.
//
// Thread model: thread-safe (each request opens its own connection; the incarnation is guarded
// by a mutex), so the heartbeat thread and the main thread may use one client at once.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/protocol/worker_codec.h"
#include "common/status.h"
#include "common/store/http_store_client.h"
#include "worker/checkpointing/checkpoint_channel.h"

namespace ddp::runtime {

inline constexpr Duration kControllerConnectTimeout = std::chrono::seconds(5);  // per attempt
inline constexpr Duration kControllerInitialBackoff = std::chrono::milliseconds(50);
inline constexpr Duration kControllerMaxBackoff = std::chrono::seconds(1);
inline constexpr Duration kAssignmentLongPoll = std::chrono::seconds(2);  // wait_ms asked (the server caps it at 2 s)
inline constexpr const char* kJobFinishedPrefix = "job finished: state ";
inline constexpr const char* kFencedPrefix = "fenced: stale generation";

// ---- Wire types and codecs (common/protocol/, docs/API.md) ----

using protocol::Assignment;
using protocol::CollectiveView;
using protocol::Command;
using protocol::CommandType;
using protocol::commandTypeName;
using protocol::FlightOp;
using protocol::HeartbeatCheckpoint;
using protocol::HeartbeatAnswer;
using protocol::HeartbeatCounters;
using protocol::Heartbeat;
using protocol::LastShardReport;
using protocol::parseWorkerState;
using protocol::PeerInfo;
using protocol::Registration;
using protocol::Rejoin;
using protocol::WorkerState;
using protocol::workerStateName;

using protocol::decodeAssignment;
using protocol::decodeCommitVerdict;
using protocol::decodeHeartbeatAnswer;
using protocol::decodeHeartbeat;
using protocol::decodeRegistration;
using protocol::encodeAssignment;
using protocol::encodeCommitOutcome;
using protocol::encodeHeartbeatAnswer;
using protocol::encodeHeartbeat;
using protocol::encodeRegistrationRequest;
using protocol::encodeShardOutcome;

// The statuses with their own meaning (see the header comment); context may be prepended.
bool isFenced(const Status& st);
// The job's final state when `st` is awaitAssignment's job-finished status (Note [Job finished]).
std::optional<std::string> jobFinished(const Status& st);

// ---- The client ----

struct ControllerClientOptions {
  std::string url;  // "http://host:port"
  std::string job;
  std::string token;
  std::string workerId;
  Duration connectTimeout = kControllerConnectTimeout;
  Duration initialBackoff = kControllerInitialBackoff;
  Duration maxBackoff = kControllerMaxBackoff;
  Duration assignmentPoll = kAssignmentLongPoll;

  Status validate() const;
};

class ControllerClient {
 public:
  static Result<std::unique_ptr<ControllerClient>> create(ControllerClientOptions options);

  // POST /v1/jobs/{job}/workers (with `rejoin`: after leaving a generation on a fault).
  Result<Registration> registerWorker(const std::string& host, const std::string& advertiseAddress,
                                      int64_t pid, Deadline deadline, const Rejoin& rejoin = {}) const;
  // Long-polls GET /v1/jobs/{job}/workers/{id}/assignment?after=G until a round after generation
  // `after` closes with this worker in it (200), asking again on 204. Timeout when the deadline
  // passes first; OutOfRange when the job is finished.
  Result<Assignment> awaitAssignment(Deadline deadline, int64_t after = 0) const;
  // POST /v1/jobs/{job}/generations/{g}/heartbeat; the controller's command in the answer.
  Result<HeartbeatAnswer> heartbeat(int64_t generation, const Heartbeat& report,
                                    Deadline deadline) const;

  // The store of `generation` on the same controller: HttpStoreClient::connect(storeAddress(),
  // storeOptions(generation)). The server applies the job/generation namespace.
  comm::HttpStoreClientOptions storeOptions(int64_t generation) const;
  // The two-phase checkpoint commit's routes for `generation` (checkpoint_channel.h); the
  // channel refers to this client, which must outlive it.
  std::unique_ptr<CheckpointChannel> checkpointChannel(int64_t generation) const;
  std::string storeAddress() const { return host_ + ":" + std::to_string(port_); }
  const std::string& url() const { return options_.url; }
  const ControllerClientOptions& options() const { return options_; }

  struct Reply {
    int status = 0;
    std::string body;
  };

 private:
  ControllerClient(ControllerClientOptions options, std::string host, int port);
  enum class Method { kGet, kPost };
  // One request, retried as the header says; `readTimeout` is capped by the deadline.
  friend class ControllerCheckpointChannel;
  Result<Reply> send(Method method, const std::string& path, const std::string& body,
                     Deadline deadline, Duration readTimeout, const std::string& what) const;
  // A non-success answer as a Status (mapping in the header comment).
  Status replyError(const Reply& reply, const std::string& what) const;
  std::string jobPath() const;

  const ControllerClientOptions options_;
  const std::string host_;
  const int port_;
  mutable std::mutex mu_;
  mutable std::string incarnation_;  // guarded by mu_: set by the first registration's answer
  mutable std::optional<LastShardReport> lastShard_;  // guarded by mu_: set by a delivered report
};

}  // namespace ddp::runtime
