#pragma once
// Scheduling priority of communication threads (Note [Comm thread priority]).
//
// Note [Comm thread priority]
// Every step hands work between threads: the compute thread marks a bucket ready, the reducer's
// comm thread runs its hook, the backend's executor posts the collective, Gloo's I/O loop moves
// the bytes, and each completion wakes the next thread. Each of these threads sleeps most of
// the time and runs for microseconds. When every core is busy with compute threads (two
// workers on two cores, the normal case for CPU training), a woken comm thread waits for the
// scheduler to preempt a compute thread: on Linux's fair scheduler that is up to one time
// slice (~1-3 ms) per hand-off, so a 1 MB allreduce that takes 0.4 ms on an idle machine is
// exposed for several milliseconds, and communication cannot overlap backward at all.
// bench_train measured it: the MLP on 2 workers ran at 0.70x of 1 worker with comm threads at
// normal priority and at 1.6x with them at SCHED_FIFO (docs/PERFORMANCE.md).
//
// So communication threads run at real-time priority 1 (SCHED_FIFO) when the process may:
// they then preempt compute threads at once. They block rather than spin in our own code, so
// they cannot starve compute (and the kernel keeps 5% of each period for normal threads).
//
// Gloo spin-waits in two places: its I/O loop retries a pair whose lock another thread holds on
// every epoll tick (it only try-locks), and an unbound buffer's destructor sched_yield()s until
// the loop lets go of it. A real-time thread spinning on a lock held by a normal thread never
// lets that thread run (yield only yields to equal priority): a livelock that the tests found
// within minutes. Hence the rule: every thread that enters Gloo runs at the same comm priority.
// The backend's executor, header lane and p2p threads apply it; Gloo's own threads inherit it
// (GlooBackend::create() connects under a `CommPriorityScope`, and threads inherit the policy of
// their creator); teardown and abort run under a scope too. The reducer's comm thread applies
// it for CPU parameters only: with CUDA parameters its hooks may wait on the GPU in spinning
// synchronisations. Compute threads stay SCHED_OTHER.
//
// Starvation guard. Equal priority keeps Gloo's spinners from starving one another only while
// the spinning threads do not outnumber the cores; with more (four workers on two cores, or
// several ranks in one process) two spinners can hold every core while the thread they wait for
// queues behind them. The kernel's real-time throttling then gives normal threads only ~5% of
// each second (and other real-time threads nothing). So the first promotion starts a guard: a
// witness thread at normal priority stamps the time every 50 ms, and a guard thread at
// real-time priority 2 (above every comm thread, so it always gets a core) demotes every comm
// thread of the process to SCHED_OTHER, and turns the mode to `normal`, when the witness has
// not run for 500 ms, with a warning. The two share only atomics (the witness may be preempted
// anywhere), and the demotion allocates nothing and takes no lock a starved thread could hold.
// A livelock thus costs about half a second, once. `ddpctl run` asks for `normal` when a job
// has more workers x threads than the machine has cores.
//
// The process-wide mode: `auto` (the default) uses real time when permitted (root, or
// CAP_SYS_NICE in a container) and falls back to normal priority otherwise, logging once why;
// `realtime` is the same but logs the refusal as a warning; `normal` never changes anything.
// Set by the job spec (`spec.commThreadPriority`) or the environment variable
// DDP_COMM_THREAD_PRIORITY (read on first use).
//
// Thread model: the mode is an atomic; applyCommThreadPriority() affects only the calling thread.

#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp {

enum class CommThreadPriority { kAuto = 0, kRealtime, kNormal };

const char* commThreadPriorityName(CommThreadPriority p);
// Parses "auto" | "realtime" | "normal"; the error names the value and the choices.
Result<CommThreadPriority> parseCommThreadPriority(std::string_view text);

// The process-wide mode. Until set, the DDP_COMM_THREAD_PRIORITY environment variable (an
// invalid value is logged once and ignored), else kAuto.
void setCommThreadPriority(CommThreadPriority p);
CommThreadPriority commThreadPriority();
// What DDP_COMM_THREAD_PRIORITY asks for now: kAuto when unset, empty or invalid (an invalid
// value is logged as a warning).
CommThreadPriority commThreadPriorityFromEnvironment();

// What applyCommThreadPriority() did to the calling thread.
struct AppliedPriority {
  bool realtime = false;   // the thread now runs SCHED_FIFO
  std::string detail;      // why not, when real time was wanted and refused; empty otherwise
};

// Gives the calling thread the process-wide mode's policy (see the Note). Idempotent; never
// fails: a refusal leaves the thread as it was and is reported in the result (and logged once
// per process).
AppliedPriority applyCommThreadPriority();

// Raises the calling thread to comm priority for the scope's lifetime and restores its previous
// policy after: threads created inside the scope (by a library) inherit comm priority.
class CommPriorityScope {
 public:
  CommPriorityScope();
  ~CommPriorityScope();
  CommPriorityScope(const CommPriorityScope&) = delete;
  CommPriorityScope& operator=(const CommPriorityScope&) = delete;

 private:
  bool changed_ = false;
  int oldPolicy_ = 0;
  int oldPriority_ = 0;
};

// Starvation guard (see the Note): demotions so far, and a way to run the demotion now (tests;
// the canary calls it when it sees normal threads starved). Returns the threads demoted.
int commPriorityDemotions();
int demoteCommThreads(const std::string& why);

// Names the calling thread (at most 15 characters are kept) so that top -H, perf and gdb show it.
void setThreadName(const char* name);

}  // namespace ddp
