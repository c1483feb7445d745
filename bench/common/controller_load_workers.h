#pragma once
// SimulatedWorkers: N simulated workers of one controller job (bench_controller). Each worker
// has its own keep-alive connection; all of them are driven by one ControllerLoadClient on the
// caller's thread. rendezvous() runs the worker side of docs/API.md's rendezvous (register, then
// long-poll the assignment until it holds a rank) and checks that ranks 0..N-1 were each handed
// out once; heartbeat() then sends 1 Hz heartbeats from every worker at evenly spread phases and
// measures each request's latency (send .. full response).
// Thread model: starts no thread; use from one thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common/controller_load_client.h"
#include "common/clock.h"
#include "common/status.h"

namespace ddp::bench {

struct SimulatedJob {
  std::string host;           // the controller
  int port = 0;
  std::string name;           // the job; worker ids are "<name>-w<i>"
  std::string workerToken;
  int workers = 0;
};

struct SimulatedWorkersOptions {
  Duration connectTimeout = std::chrono::seconds(30);
  Duration rendezvousTimeout = std::chrono::seconds(120);
  Duration heartbeatPeriod = std::chrono::seconds(1);
  Duration heartbeatGrace = std::chrono::seconds(30);  // after the last scheduled beat
  int64_t waitMs = 2000;                                // assignment long poll
  bool keepSamples = false;                             // HeartbeatResult::samples
  std::function<bool()> interrupted;                    // polled between batches (may be empty)
};

struct RendezvousResult {
  double connectSeconds = 0;  // opening the N connections (before the clock starts)
  double joinSeconds = 0;     // first join sent .. every join answered
  double seconds = 0;         // first join sent .. every worker holds its assignment
  int64_t generation = 0;
  int64_t polls = 0;          // assignment requests, 204 repeats included
  int64_t assignmentBytes = 0;
  double clientCpuSeconds = 0;
  double controllerCpuSeconds = 0;  // 0 when not sampled
};

struct HeartbeatResult {
  int64_t requests = 0;       // answered or failed
  int64_t errors = 0;         // not 200 (transport errors included)
  int64_t deferred = 0;       // due while the previous beat of that worker was still in flight
  int64_t retries = 0;        // resent on a fresh connection (the server had closed the idle one)
  double p50Ms = 0, p99Ms = 0, maxMs = 0, meanMs = 0;
  double windowSeconds = 0;   // first scheduled beat .. last response
  double controllerCpuCores = 0;
  double clientCpuCores = 0;
  std::string firstError;
  // Every beat (when SimulatedWorkersOptions::keepSamples): send time in seconds after the first
  // scheduled beat, latency in ms (-1: no 200 answer), worker index.
  struct Sample {
    double sentS;
    double ms;
    int worker;
  };
  std::vector<Sample> samples;
};

// The integer value of member `key` of the top-level JSON object in `json` (nested objects and
// arrays are skipped, so a "rank" inside "peers" does not match). Pure.
std::optional<int64_t> topLevelJsonInt(std::string_view json, std::string_view key);

class SimulatedWorkers {
 public:
  SimulatedWorkers(SimulatedJob job, SimulatedWorkersOptions options);

  // Opens the connections, then joins and waits for every assignment. Fails (naming the worker
  // and the answer) on any status but 200/204, a missing rank, a rank handed out twice, a world
  // size other than N, or the timeout.
  // `controllerCpuSeconds` (may be empty) is sampled when the first join is sent and at the end.
  Result<RendezvousResult> rendezvous(const std::function<Result<double>()>& controllerCpuSeconds = {});
  // After rendezvous(): `seconds` beats per worker. `controllerCpuSeconds` is sampled at the
  // start and the end of the window.
  Result<HeartbeatResult> heartbeat(int seconds, const std::function<Result<double>()>& controllerCpuSeconds);

 private:
  enum class Phase { kIdle, kJoining, kPolling, kDone };
  struct Worker {
    std::string id;
    Phase phase = Phase::kIdle;
    int rank = -1;
    int pendingBeats = 0;  // heartbeat: beats due while one was in flight
    int beatsSent = 0;
  };
  Status openConnections(Deadline deadline);
  void onRendezvousResponse(int conn, LoadResponse& r);
  void sendBeat(int conn);
  bool interrupted() const { return options_.interrupted && options_.interrupted(); }

  const SimulatedJob job_;
  const SimulatedWorkersOptions options_;
  const std::string hostPort_;
  ControllerLoadClient client_;
  std::vector<Worker> workers_;
  int64_t generation_ = 0;
  // Rendezvous progress (callback state).
  int joined_ = 0;
  int assigned_ = 0;
  TimePoint lastJoin_{}, lastAssigned_{};
  Status failure_;
  std::vector<int> rankHolder_;  // rank -> worker index, -1 while unassigned
  RendezvousResult rdzv_;
};

}  // namespace ddp::bench
