#pragma once
// ProcessSupervisor: runs N worker processes on this host and watches them (the core of
// `ddpctl run`).
//
// Note [Worker supervision]
//  - start() fork/execs every worker with its stdout and stderr on pipes, in its own session
//    (setsid: its own process group without a controlling terminal, so a terminal's Ctrl-C
//    reaches only the supervisor, which forwards it; and, where the kernel groups CPU time by
//    session (autogroup), each worker is scheduled as its own group, as separate machines'
//    workers would be) and with PR_SET_PDEATHSIG=SIGKILL (a supervisor that dies takes its
//    workers with it).
//  - run() multiplexes the pipes into one view (Note [Merged worker output]) and reaps exits.
//    The first worker that exits non-zero or by a signal is reported (rank, exit status or
//    signal, its last lines); every other worker then gets SIGTERM, and SIGKILL once the grace
//    period has passed. A stop request (requestStop, e.g. from Ctrl-C) does the same without a
//    failure; a second request escalates to SIGKILL at once. The run's deadline, when it
//    passes, stops the workers the same way and is reported as a timeout.
//  - Every wait is bounded: poll() with a short interval, the grace period, and a final drain
//    of at most kDrainLimit after the last exit.
// Thread model: start() and run() on one thread; requestStop() is async-signal-safe (one
// write() to a self-pipe) and may be called from a signal handler or any thread.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/process/output_router.h"

namespace ddp::runtime {

struct ProcessSpec {
  std::string exe;
  std::vector<std::string> args;       // argv[1..]
  std::vector<std::string> extraEnv;   // "NAME=value", added to (and overriding) ours
};

struct SupervisorOptions {
  Duration grace = std::chrono::seconds(15);  // SIGTERM -> SIGKILL
  size_t tailLines = 20;                      // lines kept per rank for death reports
  Duration pollInterval = std::chrono::milliseconds(50);
};

// How one worker ended.
struct WorkerExit {
  int rank = -1;
  bool signaled = false;
  int code = 0;    // exit status, or the signal number when signaled
  bool killedBySupervisor = false;
  bool ok() const { return !signaled && code == 0; }
  std::string describe() const;  // "rank 1 exited with status 3", "rank 0 killed by signal 9 (Killed)"
};

struct SupervisorOutcome {
  std::vector<WorkerExit> exits;          // by rank
  std::optional<WorkerExit> firstFailure; // the worker whose failure stopped the job
  bool stopRequested = false;             // requestStop() was called
  int stopSignal = 0;                     // the signal number passed to the first requestStop
  bool timedOut = false;                  // the run's deadline passed
  bool allOk() const;                     // every worker exited 0, no stop, no timeout
};

class ProcessSupervisor {
 public:
  using Sink = std::function<void(const RoutedLine&)>;

  // `sink` receives every routed line and the supervisor's own messages (kStderr).
  ProcessSupervisor(SupervisorOptions options, Sink sink);
  ~ProcessSupervisor();  // SIGKILLs and reaps any worker still running
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  // Starts one process per spec; spec i is rank i. On failure, already started ones are killed.
  Status start(const std::vector<ProcessSpec>& workers);
  // Supervises until every worker has exited (Note [Worker supervision]).
  Result<SupervisorOutcome> run(Deadline deadline);
  // Async-signal-safe stop request (`signal` is reported and forwarded as SIGTERM).
  void requestStop(int signal);

  std::vector<pid_t> pids() const;

 private:
  struct Child;
  void emit(RouteTarget target, const std::string& text);
  void readChild(Child& c, int streamIndex);
  void drainChild(Child& c, Deadline deadline);
  void signalAll(int sig);
  void beginStop(int sig);
  void reportFailure(const WorkerExit& e);

  SupervisorOptions options_;
  Sink sink_;
  std::vector<Child> children_;
  std::optional<OutputRouter> router_;
  int wakeRead_ = -1, wakeWrite_ = -1;
  bool stopping_ = false;
  bool killSent_ = false;
  TimePoint killAt_{};
};

}  // namespace ddp::runtime
