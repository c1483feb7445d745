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
// thread of the process to SCHED_OTHER, and raises none again, when the witness has not run for
// 500 ms, with a warning. The two share only atomics (the witness may be preempted
// anywhere), and the demotion allocates nothing and takes no lock a starved thread could hold.
// A livelock thus costs about half a second, once. `ddpctl run` asks for `normal` when a job
// has more workers x threads than the machine has cores.
//
// Policy. The policy is a value, `auto` (the default), `realtime` or `normal`, chosen once per worker and
// handed down explicitly; nothing here reads the environment or keeps a process-wide mode. The
// worker's own setting (WorkerConfig::commThreadPriority: --comm-thread-priority or
// DDP_COMM_THREAD_PRIORITY, read by worker_config.cc) wins over the job's
// `spec.commThreadPriority`; worker_entry puts the result in TrainerConfig::commThreadPriority
// and GlooOptions::commThreadPriority; the trainer passes it on in ReducerOptions; and each
// component that raises a thread passes it to applyCommThreadPriority() / CommPriorityScope.
// `auto` uses real time when permitted (root, or CAP_SYS_NICE in a container) and falls back to
// normal priority otherwise, logging once per process why; `realtime` is the same but logs the
// refusal as a warning; `normal` never changes anything. A local launcher decides what its
// workers get with workerCommPriority() (worker/control/launch_env.h).
//
// Per-process state. What stays per process, because the kernel schedules the process as a whole and the guard
// acts on all of its threads: the starvation guard (its two threads, started by the first
// promotion, stopped and joined at exit), its demotion count, and two one-way latches: "the
// guard has demoted" (from then on no thread of the process is raised again, whatever policy
// it is given: one livelock costs half a second once, not once per thread) and "the refusal
// was logged" (the said-once line). None of them is configuration, and nothing resets them.
//
// Thread model: applyCommThreadPriority() and CommPriorityScope affect only the calling thread;
// the per-process state is atomics (the guard's start is under its own mutex).

#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp {

enum class CommThreadPriority { kAuto = 0, kRealtime, kNormal };

const char* commThreadPriorityName(CommThreadPriority p);
// Parses "auto" | "realtime" | "normal"; the error names the value and the choices.
Result<CommThreadPriority> parseCommThreadPriority(std::string_view text);

// What applyCommThreadPriority() did to the calling thread.
struct AppliedPriority {
  bool realtime = false;   // the thread now runs SCHED_FIFO
  std::string detail;      // why not, when real time was wanted and refused; empty otherwise
};

// Gives the calling thread comm priority under `policy` (see the Note): SCHED_FIFO 1 for auto
// and realtime when permitted and the guard has not demoted; nothing for normal. Idempotent;
// never fails: a refusal leaves the thread as it was and is reported in the result (and logged
// once per process).
AppliedPriority applyCommThreadPriority(CommThreadPriority policy);

// Raises the calling thread to comm priority under `policy` for the scope's lifetime and restores
// its previous policy after: threads created inside the scope (by a library) inherit it.
class CommPriorityScope {
 public:
  // The default is the default of spec.commThreadPriority and of every options struct.
  explicit CommPriorityScope(CommThreadPriority policy = CommThreadPriority::kAuto);
  ~CommPriorityScope();
  CommPriorityScope(const CommPriorityScope&) = delete;
  CommPriorityScope& operator=(const CommPriorityScope&) = delete;

 private:
  bool changed_ = false;
  int oldPolicy_ = 0;
  int oldPriority_ = 0;
};

// Starvation guard (see the Note): how many times it has demoted this process's comm threads
// (after the first, nothing is raised again; a thread that was being raised at that very moment
// can make a second).
int commPriorityDemotions();

// Names the calling thread (at most 15 characters are kept) so that top -H, perf and gdb show it.
void setThreadName(const char* name);

}  // namespace ddp
