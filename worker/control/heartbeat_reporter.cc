#include "worker/control/heartbeat_reporter.h"

#include <cstdio>
#include <utility>

#include "common/protocol/progress_figures.h"
#include "common/log.h"
#include "common/thread_priority.h"

namespace ddp::runtime {
namespace {

Duration secondsToDuration(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

std::string seconds(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", std::chrono::duration<double>(d).count());
  return buf;
}

TimePoint now() { return SystemClock::instance().now(); }

}  // namespace

HeartbeatReporterOptions HeartbeatReporterOptions::fromSpec(const TimeoutsSpec& timeouts) {
  HeartbeatReporterOptions o;
  o.period = secondsToDuration(timeouts.heartbeatSeconds);
  o.controllerTimeout = secondsToDuration(timeouts.controllerSeconds);
  return o;
}

Status HeartbeatReporterOptions::validate() const {
  if (workerId.empty()) return invalidArgument("heartbeat reporter: worker id is empty");
  if (period <= Duration::zero()) return invalidArgument("spec.timeouts.heartbeatSeconds: must be > 0");
  if (controllerTimeout <= Duration::zero()) return invalidArgument("spec.timeouts.controllerSeconds: must be > 0");
  if (requestTimeout <= Duration::zero()) return invalidArgument("heartbeat reporter: requestTimeout must be > 0");
  return Status::ok();
}

HeartbeatReporter::HeartbeatReporter(const ControllerClient& client, HeartbeatReporterOptions options,
                                     StopFn requestStop)
    : client_(client), options_(std::move(options)), requestStop_(std::move(requestStop)) {}

Result<std::unique_ptr<HeartbeatReporter>> HeartbeatReporter::create(const ControllerClient& client,
                                                                     HeartbeatReporterOptions options,
                                                                     StopFn requestStop) {
  DDP_RETURN_IF_ERROR(options.validate());
  return std::unique_ptr<HeartbeatReporter>(new HeartbeatReporter(client, std::move(options), std::move(requestStop)));
}

HeartbeatReporter::~HeartbeatReporter() { stop(); }

void HeartbeatReporter::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void HeartbeatReporter::publish(const TrainingProgress& progress) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_ = progress;
    // The first finished step of this generation goes out at once: it tells the controller
    // that a recovery is complete (Note [Recovery]).
    wake = !firstStepSent_ && progress.steps >= 1;
    if (wake) firstStepSent_ = beatNow_ = true;
  }
  if (wake) cv_.notify_all();
}

void HeartbeatReporter::setCollectivesSource(CollectivesFn source) {
  std::lock_guard<std::mutex> lock(sourceMu_);
  source_ = std::move(source);
}

void HeartbeatReporter::setFlightRecordSource(FlightRecordFn source) {
  std::lock_guard<std::mutex> lock(sourceMu_);
  flightSource_ = std::move(source);
}

void HeartbeatReporter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status HeartbeatReporter::finish(WorkerState state, const std::string& message, Deadline deadline) {
  stop();
  // Fenced: our generation is gone. Lost: we already waited controllerSeconds for it.
  if (Status f = fatalStatus(); !f.isOk()) return f;
  auto answer = client_.heartbeat(options_.generation, snapshot(state, message), deadline);
  if (!answer.isOk()) {
    DDP_LOG(Warning) << "last heartbeat (" << workerStateName(state) << ") not delivered: " << answer.status().message();
    return answer.status();
  }
  return Status::ok();
}

Status HeartbeatReporter::fatalStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fatal_;
}

bool HeartbeatReporter::stopCommanded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopCommanded_;
}

std::vector<Command> HeartbeatReporter::commands() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commands_;
}

int64_t HeartbeatReporter::heartbeatsSucceeded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return succeeded_;
}

int64_t HeartbeatReporter::heartbeatsFailed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

Heartbeat HeartbeatReporter::snapshot(WorkerState state, const std::string& message) {
  TrainingProgress p;
  bool withFlightRecord = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = progress_;
    withFlightRecord = std::exchange(flightRecordWanted_, false);
  }
  Heartbeat r;
  r.workerId = options_.workerId;
  r.rank = options_.rank;
  r.state = state;
  r.message = message.empty() ? p.warning : message;
  protocol::copyProgressFigures(p, &r);
  r.counters = {p.samples, p.steps, p.stepSeconds, p.commBytes, p.commExposedSeconds,
                p.compressionUncompressedBytes, p.compressionSentBytes};
  if (p.checkpoint) r.checkpoint = HeartbeatCheckpoint{p.checkpoint->step, p.checkpoint->bytes, p.checkpoint->path};
  r.ext = options_.ext;
  std::lock_guard<std::mutex> lock(sourceMu_);
  if (source_) r.collectives = source_();
  if (withFlightRecord && flightSource_) r.flightRecord = flightSource_();
  const double period = std::chrono::duration<double>(options_.period).count();
  waiting_ = false;
  for (const auto& c : r.collectives) waiting_ = waiting_ || (c.seq >= 0 && c.seconds >= period);
  return r;
}

void HeartbeatReporter::run() {
  setThreadName("ddp-heartbeat");
  TimePoint lastContact = now();
  TimePoint next = lastContact;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next, [this] { return stopping_ || beatNow_; });
      if (stopping_) return;
      beatNow_ = false;
    }
    if (!beat(&lastContact)) return;
    // While a collective has been waiting for longer than a period (a peer may be gone), beat
    // every kWaitingHeartbeat: the controller's `abort` then reaches this rank within that.
    next = std::max(waiting_ ? std::min(next + options_.period, now() + kWaitingHeartbeat) : next + options_.period, now());
  }
}

bool HeartbeatReporter::beat(TimePoint* lastContact) {
  const Deadline lost(*lastContact + options_.controllerTimeout);
  const Deadline deadline = Deadline::after(options_.requestTimeout).min(lost);
  Result<HeartbeatAnswer> answer =
      deadline.expired() ? Result<HeartbeatAnswer>(timeoutError("no time left"))
                         : client_.heartbeat(options_.generation, snapshot(WorkerState::kRunning, ""), deadline);
  if (answer.isOk()) {
    *lastContact = now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++succeeded_;
    }
    return handle(answer->command);
  }
  int64_t failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failures = ++failed_;
  }
  if (isFenced(answer.status())) {
    fail(abortedError(answer.status().message() + " (this worker is in generation " + std::to_string(options_.generation) +
                      "; controller at " + client_.url() + "): stopping"));
    return false;
  }
  if (lost.expired()) {
    fail(unavailable("cannot reach the controller at " + client_.url() + " for " +
                     seconds(options_.controllerTimeout) + ": stopping (last error: " +
                     answer.status().message() + ")"));
    return false;
  }
  if (failures == 1 || failures % 10 == 0) {
    DDP_LOG(Warning) << "heartbeat failed (" << failures << " so far): " << answer.status().message();
  }
  return true;
}

bool HeartbeatReporter::handle(const Command& command) {
  if (command.type == CommandType::kNone) return true;
  if (command.type == CommandType::kAbort) {
    // Note [Worker generations] (worker_entry.cc): the generation ended; this worker rejoins.
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(command);
      abortCommanded_ = true;
    }
    DDP_LOG(Warning) << "the controller ended generation " << options_.generation
                     << ": aborting the communicator to rejoin";
    std::lock_guard<std::mutex> lock(sourceMu_);
    if (abort_) abort_(abortedError("the controller ended generation " + std::to_string(options_.generation)));
    return false;  // nothing more to report for this generation
  }
  if (command.type == CommandType::kFlightRecord) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(command);
      flightRecordWanted_ = beatNow_ = true;
    }
    DDP_LOG(Warning) << "the controller asked for this rank's flight record (a hang was declared): sending it";
    return true;  // run() sends the next heartbeat at once
  }
  bool repeated = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    repeated = !commands_.empty() && commands_.back() == command;
    if (!repeated) commands_.push_back(command);
    if (command.type == CommandType::kStop) stopCommanded_ = true;
  }
  if (command.type == CommandType::kStop) {
    if (!repeated) DDP_LOG(Info) << "the controller asked this worker to stop: checkpointing and stopping";
    if (requestStop_) requestStop_();
    return true;
  }
  if (repeated) return true;
  if (command.type == CommandType::kCheckpoint) {
    DDP_LOG(Info) << "the controller asked for a checkpoint (requested at step " << command.step << ")";
    checkpointRequested_ = true;
  } else {
    DDP_LOG(Info) << "the controller sent command '" << commandTypeName(command.type) << "' (recorded; not acted on yet)";
  }
  return true;
}

void HeartbeatReporter::setAbortTarget(AbortFn abort) {
  bool already = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    already = abortCommanded_;
  }
  std::lock_guard<std::mutex> lock(sourceMu_);
  abort_ = std::move(abort);
  if (already && abort_) abort_(abortedError("the controller ended generation " + std::to_string(options_.generation)));
}

bool HeartbeatReporter::abortCommanded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abortCommanded_;
}

void HeartbeatReporter::fail(const Status& why) {
  const bool fenced = why.code() == StatusCode::kAborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fatal_.isOk()) fatal_ = why;
    // Fenced: the job goes on without this worker (a newer generation, or a scale-down retired
    // it while its peers still train). A stop request would reach the peers through the trainer's
    // flag allreduce and stop every rank; aborting the communicator fails their collectives
    // instead, so they rejoin, while this worker exits (fatalStatus()). A target set later
    // aborts at once (setAbortTarget).
    if (fenced) abortCommanded_ = true;
  }
  DDP_LOG(Error) << why.message();
  if (fenced) {
    std::lock_guard<std::mutex> lock(sourceMu_);
    if (abort_) abort_(why);
    return;
  }
  if (requestStop_) requestStop_();
}

}  // namespace ddp::runtime
