#pragma once
// HeartbeatReporter: posts this worker's heartbeat to the controller every
// spec.timeouts.heartbeatSeconds (docs/API.md, "Heartbeats") and hands the controller's commands
// to the trainer.
//
// Note [Heartbeats while waiting]
// A rank whose oldest unfinished collective is older than the period is probably waiting for a
// peer that is gone: it then beats every kWaitingHeartbeat (200 ms), so a hang verdict's `abort`
// reaches it within that instead of a whole period. A healthy step's collectives finish well
// within a period, so this costs nothing while training goes well.
//
// Note [Heartbeats never slow a step]
// The training thread only publish()es a TrainingProgress (trainer.h): a copy under `mu_`, which
// the heartbeat thread holds only to copy the snapshot out, never across a request. A slow or
// absent controller therefore delays heartbeats, never a step.
//
// Commands: `stop` calls the stop function (the same flag SIGTERM sets: the trainer checkpoints
// and stops at a step every rank agrees on, and the worker exits 0); `abort` (the controller
// ended this generation: Note [Recovery] in controller/jobs/job_manager.h) calls the abort
// target (the backend's abort: the training thread's collectives fail at once) and ends the
// heartbeat thread; `checkpoint` sets checkpointRequested() (the trainer checkpoints at the next
// step every rank agrees on); `flightRecord` sends a heartbeat at once that carries the flight
// record source's ops (the controller asks for them when it declares a hang, even in answer to
// a heartbeat of a generation it ended: controller/jobs/hang/flight_records.h).
// Losing the controller: when no heartbeat succeeded for spec.timeouts.controllerSeconds, the
// reporter records "cannot reach the controller at URL for N s: stopping" as its fatal status
// (Unavailable) and calls the stop function (every rank checkpoints and stops); a 410 answer
// (fenced: the job goes on without this worker) records the Aborted "fenced: ..." status and
// aborts through the abort target instead (now, or when one is set): a stop would reach the
// peers through the trainer's flag allreduce and stop them too. Either way the thread then
// ends, and the worker, seeing fatalStatus(), exits non-zero. finish() sends the last heartbeat (state
// Succeeded / Stopped / Failed and a message) under a short deadline, unless the reporter
// already gave up on the controller.
//
// Thread model: start() starts one thread (the heartbeat thread); stop(), finish() and the
// destructor stop and join it. publish() and setCollectivesSource() may be called from any
// thread; the accessors too. The stop function and the collectives source run on the heartbeat
// thread (the source under `sourceMu_`, so setCollectivesSource({}) returning means no call of
// the old source is running: clear it before the backend it reads goes away).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "worker/control/controller_client.h"
#include "worker/training/trainer.h"

namespace ddp::runtime {

// Bound of one heartbeat request (also capped by the time left before the controller counts
// as lost), so stopping the reporter never waits longer than this on a request in flight.
inline constexpr Duration kHeartbeatRequestTimeout = std::chrono::seconds(5);
// Heartbeat period while this rank waits in a collective for longer than the normal period.
inline constexpr Duration kWaitingHeartbeat = std::chrono::milliseconds(200);
// Bound of the last heartbeat, sent after training.
inline constexpr Duration kFinalHeartbeatTimeout = std::chrono::seconds(3);

struct HeartbeatReporterOptions {
  std::string workerId;
  int rank = -1;
  int64_t generation = 0;
  Duration period = std::chrono::seconds(1);              // spec.timeouts.heartbeatSeconds
  Duration controllerTimeout = std::chrono::seconds(60);  // spec.timeouts.controllerSeconds
  Duration requestTimeout = kHeartbeatRequestTimeout;
  // Figures sent in every heartbeat's `ext` (e.g. "abortUnreliable": 1 when the start-up abort
  // self-test failed: Note [Worker generations] in worker_entry.cc).
  std::map<std::string, double> ext;

  // Period and controller timeout from the spec; identity left empty.
  static HeartbeatReporterOptions fromSpec(const TimeoutsSpec& timeouts);
  Status validate() const;
};

class HeartbeatReporter {
 public:
  using StopFn = std::function<void()>;
  using CollectivesFn = std::function<std::vector<CollectiveView>()>;
  using AbortFn = std::function<void(const Status&)>;
  using FlightRecordFn = std::function<std::vector<FlightOp>()>;

  // `client` must outlive the reporter. `requestStop` sets the trainer's stop flag.
  static Result<std::unique_ptr<HeartbeatReporter>> create(const ControllerClient& client,
                                                           HeartbeatReporterOptions options,
                                                           StopFn requestStop);
  ~HeartbeatReporter();
  HeartbeatReporter(const HeartbeatReporter&) = delete;
  HeartbeatReporter& operator=(const HeartbeatReporter&) = delete;

  // Starts the heartbeat thread; the first heartbeat goes out at once (state Running, step 0
  // until the trainer publishes). At most once.
  void start();
  // The latest figures; cheap, never waits on the network (Note [Heartbeats never slow a step]).
  void publish(const TrainingProgress& progress);
  // The oldest unfinished collective per backend, asked once per heartbeat; empty: none.
  void setCollectivesSource(CollectivesFn source);
  // The ops the `flightRecord` command sends (same lock and rule as the collectives source).
  void setFlightRecordSource(FlightRecordFn source);
  // What `abort` calls (on the heartbeat thread, under the same lock as the collectives source:
  // clear it before the backend goes away). Set after an abort already arrived: called at once.
  void setAbortTarget(AbortFn abort);
  bool abortCommanded() const;
  // Set by the `checkpoint` command; the trainer clears it once every rank agreed on the step
  // (TrainerIo::checkpointNow).
  std::atomic<bool>& checkpointRequested() { return checkpointRequested_; }
  // Stops and joins the heartbeat thread (waits for a request in flight, at most
  // options.requestTimeout). Idempotent.
  void stop();
  // stop(), then the last heartbeat with `state` and `message`, unless the reporter already gave
  // up on the controller (fatalStatus() not ok: fenced, or lost for controllerTimeout; then
  // returns that status without sending). Returns that heartbeat's status.
  Status finish(WorkerState state, const std::string& message, Deadline deadline);

  // OK, or why the reporter stopped training (controller lost: Unavailable; fenced: Aborted).
  Status fatalStatus() const;
  // Whether the controller sent `stop`.
  bool stopCommanded() const;
  std::vector<Command> commands() const;  // every command but none, in order, repeats folded
  int64_t heartbeatsSucceeded() const;
  int64_t heartbeatsFailed() const;

 private:
  HeartbeatReporter(const ControllerClient& client, HeartbeatReporterOptions options, StopFn requestStop);
  void run();
  // One heartbeat; false when the thread should end (fatal).
  bool beat(TimePoint* lastContact);
  // Acts on a command; false when the thread should end (abort).
  bool handle(const Command& command);
  void fail(const Status& why);
  Heartbeat snapshot(WorkerState state, const std::string& message);

  const ControllerClient& client_;
  const HeartbeatReporterOptions options_;
  const StopFn requestStop_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  TrainingProgress progress_;   // guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  Status fatal_;                // guarded by mu_
  bool stopCommanded_ = false;  // guarded by mu_
  bool abortCommanded_ = false; // guarded by mu_
  bool firstStepSent_ = false;  // guarded by mu_
  bool beatNow_ = false;        // guarded by mu_: send a heartbeat before the period ends
  bool flightRecordWanted_ = false;  // guarded by mu_: the next heartbeat carries the record
  std::vector<Command> commands_;  // guarded by mu_
  int64_t succeeded_ = 0;       // guarded by mu_
  int64_t failed_ = 0;          // guarded by mu_

  std::mutex sourceMu_;
  CollectivesFn source_;        // guarded by sourceMu_
  FlightRecordFn flightSource_; // guarded by sourceMu_
  AbortFn abort_;               // guarded by sourceMu_

  std::atomic<bool> checkpointRequested_{false};
  bool waiting_ = false;  // heartbeat thread only: the last snapshot showed a long wait
  std::thread thread_;
};

}  // namespace ddp::runtime
