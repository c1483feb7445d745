#include "common/thread_priority.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/log.h"

namespace ddp {
namespace {

constexpr int kCommFifoPriority = 1;  // the lowest real-time priority: above every normal thread

struct LinuxDirent64 {  // the kernel's record for getdents64 (no glibc wrapper in Debian 12)
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Every SCHED_FIFO priority-1 thread of this process (comm threads, and Gloo's, which inherit)
// to SCHED_OTHER; returns how many. Allocates nothing and takes no lock that a starved thread
// could hold: the directory is read with getdents64 into a stack buffer.
int demoteFifoCommThreads() {
  const int fd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int demoted = 0;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct LinuxDirent64*>(buf + off);
      off += d->reclen;
      pid_t tid = 0;
      bool digits = d->name[0] != '\0';
      for (const char* c = d->name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') {
          digits = false;
          break;
        }
        tid = tid * 10 + (*c - '0');
      }
      if (!digits) continue;
      sched_param cur{};
      if (sched_getscheduler(tid) != SCHED_FIFO || sched_getparam(tid, &cur) != 0) continue;
      if (cur.sched_priority != kCommFifoPriority) continue;  // not a comm thread (the guard)
      sched_param sp{};
      if (sched_setscheduler(tid, SCHED_OTHER, &sp) == 0) ++demoted;
    }
  }
  ::close(fd);
  return demoted;
}

// The starvation guard (Note [Comm thread priority]): a witness thread at normal priority
// stamps the time every kBeat; a guard thread at real-time priority 2 (above every comm thread,
// so it always gets a core) checks the stamp every kCheck and demotes the comm threads when the
// witness has not run for kStarved. Started by the first promotion to real time; stopped and
// joined at process exit. One per process (the Note's "Per-process state"): it demotes every
// comm thread of the process, whoever raised it, so the "demoted" latch is the process's too.
class StarvationGuard {
 public:
  static constexpr auto kBeat = std::chrono::milliseconds(50);
  static constexpr auto kCheck = std::chrono::milliseconds(100);
  static constexpr auto kStarved = std::chrono::milliseconds(500);

  // Called by a thread that has just become SCHED_FIFO 1. Threads inherit their creator's
  // policy, and a thread cannot raise itself once equal-priority spinners hold every core, so
  // the guard is created while this thread runs at priority 2 and the witness while it runs
  // at normal priority; then this thread goes back to priority 1.
  void ensureStarted() {
    std::lock_guard<std::mutex> lock(startMu_);
    if (started_ || stop_.load()) return;
    started_ = true;
    stamp_.store(nowNs());
    sched_param sp{};
    sp.sched_priority = kCommFifoPriority + 1;
    (void)sched_setscheduler(0, SCHED_FIFO, &sp);
    guard_ = std::thread([this] { guard(); });
    sp.sched_priority = 0;
    (void)sched_setscheduler(0, SCHED_OTHER, &sp);
    witness_ = std::thread([this] { witness(); });
    sp.sched_priority = kCommFifoPriority;
    (void)sched_setscheduler(0, SCHED_FIFO, &sp);
  }
  // One-way: set by the first demotion, never cleared; from then on nothing is raised.
  bool demoted() const { return demoted_.load(); }
  int demotions() const { return demotions_.load(); }

  ~StarvationGuard() {
    stop_.store(true);
    { std::lock_guard<std::mutex> l(witnessMu_); }
    witnessCv_.notify_all();
    { std::lock_guard<std::mutex> l(guardMu_); }
    guardCv_.notify_all();
    std::lock_guard<std::mutex> lock(startMu_);
    if (witness_.joinable()) witness_.join();
    if (guard_.joinable()) guard_.join();
  }

 private:
  // The witness and the guard share nothing but atomics: the witness may be preempted at any
  // instruction (that is what it is for), so a lock it could hold would stop the guard too.
  void witness() {
    setThreadName("ddp-prio-witness");  // SCHED_OTHER: created so (ensureStarted)
    std::unique_lock<std::mutex> lock(witnessMu_);
    while (!stop_.load()) {
      stamp_.store(nowNs());
      witnessCv_.wait_for(lock, kBeat, [&] { return stop_.load(); });
    }
  }
  void guard() {
    setThreadName("ddp-prio-guard");
    sched_param cur{};
    const bool realtime =
        sched_getscheduler(0) == SCHED_FIFO && sched_getparam(0, &cur) == 0 && cur.sched_priority > kCommFifoPriority;
    std::unique_lock<std::mutex> lock(guardMu_);
    while (!stop_.load()) {
      guardCv_.wait_for(lock, kCheck, [&] { return stop_.load(); });
      if (stop_.load() || !realtime) continue;
      const int64_t starvedMs = (nowNs() - stamp_.load()) / 1000000;
      if (starvedMs < std::chrono::duration_cast<std::chrono::milliseconds>(kStarved).count()) continue;
      // Latch first (no new promotions), then demote, before anything that could wait on a
      // starved thread (allocation, the log's lock).
      demoted_.store(true);
      const int demoted = demoteFifoCommThreads();
      demotions_.fetch_add(1);
      DDP_LOG(Warning) << "comm thread priority: a normal-priority thread got no core for " << starvedMs
                       << " ms: real-time comm threads are starving the process; demoted " << demoted
                       << " thread(s) to normal priority for the rest of this process (set "
                          "commThreadPriority: normal for jobs with more workers than cores)";
      stamp_.store(nowNs());  // keeps watching: a thread raised while it demoted is caught next time
    }
  }

  std::mutex startMu_;
  bool started_ = false;  // guarded by startMu_
  std::atomic<bool> stop_{false};
  std::atomic<bool> demoted_{false};
  std::atomic<int> demotions_{0};
  std::atomic<int64_t> stamp_{0};
  std::mutex witnessMu_;
  std::condition_variable witnessCv_;
  std::mutex guardMu_;
  std::condition_variable guardCv_;
  std::thread witness_;
  std::thread guard_;
};

StarvationGuard& starvationGuard() {
  static StarvationGuard g;
  return g;
}

// The said-once latch: the first refusal of real time is logged, later ones only reported in
// AppliedPriority::detail. One-way, never reset (the Note's "Per-process state").
std::atomic<bool> gRefusalLogged{false};

// Sets SCHED_FIFO on the calling thread; returns errno (0 on success).
int raiseToFifo() {
  sched_param sp{};
  sp.sched_priority = kCommFifoPriority;
  return sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 0 : errno;  // the kernel's call, as everywhere here
}

void lowerToOther() {
  sched_param sp{};
  (void)sched_setscheduler(0, SCHED_OTHER, &sp);  // lowering is always permitted
}

constexpr const char* kDemotedDetail =
    "the starvation guard demoted this process's comm threads; they stay at normal priority";

}  // namespace

const char* commThreadPriorityName(CommThreadPriority p) {
  switch (p) {
    case CommThreadPriority::kAuto: return "auto";
    case CommThreadPriority::kRealtime: return "realtime";
    case CommThreadPriority::kNormal: return "normal";
  }
  return "?";
}

Result<CommThreadPriority> parseCommThreadPriority(std::string_view text) {
  for (auto p : {CommThreadPriority::kAuto, CommThreadPriority::kRealtime, CommThreadPriority::kNormal}) {
    if (text == commThreadPriorityName(p)) return p;
  }
  return invalidArgument("comm thread priority '" + std::string(text) + "' is not one of auto, realtime, normal");
}

AppliedPriority applyCommThreadPriority(CommThreadPriority policy) {
  AppliedPriority out;
  if (policy == CommThreadPriority::kNormal) return out;
  StarvationGuard& guard = starvationGuard();
  if (guard.demoted()) {
    out.detail = kDemotedDetail;
    return out;
  }
  // The kernel's view (sched_getscheduler), not glibc's cached one: the guard changes policies
  // behind pthread's back.
  if (sched_getscheduler(0) == SCHED_FIFO) {
    out.realtime = true;  // already (inherited from a CommPriorityScope)
    return out;
  }
  const int err = raiseToFifo();
  if (err == 0) {
    guard.ensureStarted();
    if (guard.demoted()) {  // demoted while this thread was being raised
      lowerToOther();
      out.detail = kDemotedDetail;
      return out;
    }
    out.realtime = true;
    return out;
  }
  out.detail = std::string("SCHED_FIFO refused (") + std::strerror(err) +
               "): real-time priority needs root or CAP_SYS_NICE; communication threads run at normal "
               "priority, so on busy cores each hand-off waits for a time slice";
  if (!gRefusalLogged.exchange(true)) {
    if (policy == CommThreadPriority::kRealtime) {
      DDP_LOG(Warning) << "comm thread priority 'realtime': " << out.detail;
    } else {
      DDP_LOG(Info) << "comm thread priority 'auto': " << out.detail;
    }
  }
  return out;
}

CommPriorityScope::CommPriorityScope(CommThreadPriority policy) {
  sched_param cur{};
  oldPolicy_ = sched_getscheduler(0);
  if (oldPolicy_ < 0 || sched_getparam(0, &cur) != 0) return;
  oldPriority_ = cur.sched_priority;
  if (oldPolicy_ == SCHED_FIFO) return;
  changed_ = applyCommThreadPriority(policy).realtime;
}

CommPriorityScope::~CommPriorityScope() {
  if (!changed_) return;
  sched_param sp{};
  sp.sched_priority = oldPriority_;
  (void)sched_setscheduler(0, oldPolicy_, &sp);  // lowering is always permitted
}

int commPriorityDemotions() { return starvationGuard().demotions(); }

void setThreadName(const char* name) {
  char buf[16];
  std::strncpy(buf, name, sizeof(buf) - 1);
  buf[sizeof(buf) - 1] = '\0';
  (void)pthread_setname_np(pthread_self(), buf);
}

}  // namespace ddp
