#include "common/thread_priority.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/log.h"

namespace ddp {
namespace {

constexpr int kUnset = -1;
std::atomic<int> gMode{kUnset};
std::atomic<bool> gRefusalLogged{false};
constexpr int kCommFifoPriority = 1;  // the lowest real-time priority: above every normal thread

std::atomic<int> gDemotions{0};

// The starvation guard (Note [Comm thread priority]): a witness thread at normal priority
// stamps the time every kBeat; a guard thread at real-time priority 2 (above every comm thread,
// so it always gets a core) checks the stamp every kCheck and demotes the comm threads when the
// witness has not run for kStarved. Started by the first promotion to real time; stopped and
// joined at process exit.
class Canary {
 public:
  static constexpr auto kBeat = std::chrono::milliseconds(50);
  static constexpr auto kCheck = std::chrono::milliseconds(100);
  static constexpr auto kStarved = std::chrono::milliseconds(1000);

  void ensureStarted() {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || stop_) return;
    started_ = true;
    stamp_.store(nowNs());
    witness_ = std::thread([this] { witness(); });
    guard_ = std::thread([this] { guard(); });
  }
  ~Canary() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (witness_.joinable()) witness_.join();
    if (guard_.joinable()) guard_.join();
  }

 private:
  static int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void witness() {
    setThreadName("ddp-prio-witness");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      stamp_.store(nowNs());
      cv_.wait_for(lock, kBeat, [&] { return stop_; });
    }
  }
  void guard() {
    setThreadName("ddp-prio-guard");
    sched_param sp{};
    sp.sched_priority = kCommFifoPriority + 1;
    const bool realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, kCheck, [&] { return stop_; });
      if (stop_ || !realtime) continue;
      const int64_t starvedMs = (nowNs() - stamp_.load()) / 1000000;
      if (starvedMs < std::chrono::duration_cast<std::chrono::milliseconds>(kStarved).count()) continue;
      lock.unlock();
      demoteCommThreads("a normal-priority thread got no core for " + std::to_string(starvedMs) +
                        " ms: real-time comm threads are starving the process");
      stamp_.store(nowNs());
      lock.lock();  // keeps watching: a test or a new job may set real time again
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool started_ = false;
  std::atomic<int64_t> stamp_{0};
  std::thread witness_;
  std::thread guard_;
};

Canary& canary() {
  static Canary c;
  return c;
}

// Sets SCHED_FIFO on the calling thread; returns errno (0 on success).
int raiseToFifo() {
  sched_param sp{};
  sp.sched_priority = kCommFifoPriority;
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

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

CommThreadPriority commThreadPriorityFromEnvironment() {
  const char* env = std::getenv("DDP_COMM_THREAD_PRIORITY");
  if (env == nullptr || *env == '\0') return CommThreadPriority::kAuto;
  auto parsed = parseCommThreadPriority(env);
  if (parsed.isOk()) return *parsed;
  DDP_LOG(Warning) << "DDP_COMM_THREAD_PRIORITY: " << parsed.status().message() << "; using auto";
  return CommThreadPriority::kAuto;
}

void setCommThreadPriority(CommThreadPriority p) { gMode.store(static_cast<int>(p)); }

CommThreadPriority commThreadPriority() {
  int m = gMode.load();
  if (m == kUnset) {
    const int fromEnv = static_cast<int>(commThreadPriorityFromEnvironment());
    gMode.compare_exchange_strong(m, fromEnv);  // a concurrent set() wins
    m = gMode.load();
  }
  return static_cast<CommThreadPriority>(m);
}

AppliedPriority applyCommThreadPriority() {
  AppliedPriority out;
  const CommThreadPriority mode = commThreadPriority();
  if (mode == CommThreadPriority::kNormal) return out;
  // The kernel's view (sched_getscheduler), not glibc's cached one: the guard changes policies
  // behind pthread's back.
  if (sched_getscheduler(0) == SCHED_FIFO) {
    out.realtime = true;  // already (inherited from a CommPriorityScope)
    return out;
  }
  const int err = raiseToFifo();
  if (err == 0) {
    canary().ensureStarted();
    out.realtime = true;
    return out;
  }
  out.detail = std::string("SCHED_FIFO refused (") + std::strerror(err) +
               "): real-time priority needs root or CAP_SYS_NICE; communication threads run at normal "
               "priority, so on busy cores each hand-off waits for a time slice";
  if (!gRefusalLogged.exchange(true)) {
    if (mode == CommThreadPriority::kRealtime) {
      DDP_LOG(Warning) << "comm thread priority 'realtime': " << out.detail;
    } else {
      DDP_LOG(Info) << "comm thread priority 'auto': " << out.detail;
    }
  }
  return out;
}

CommPriorityScope::CommPriorityScope() {
  sched_param cur{};
  oldPolicy_ = sched_getscheduler(0);
  if (oldPolicy_ < 0 || sched_getparam(0, &cur) != 0) return;
  oldPriority_ = cur.sched_priority;
  if (oldPolicy_ == SCHED_FIFO) return;
  changed_ = applyCommThreadPriority().realtime;
}

CommPriorityScope::~CommPriorityScope() {
  if (!changed_) return;
  sched_param sp{};
  sp.sched_priority = oldPriority_;
  (void)sched_setscheduler(0, oldPolicy_, &sp);  // lowering is always permitted
}

int commPriorityDemotions() { return gDemotions.load(); }

int demoteCommThreads(const std::string& why) {
  setCommThreadPriority(CommThreadPriority::kNormal);  // no new promotions
  int demoted = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      sched_param cur{};
      if (sched_getscheduler(tid) != SCHED_FIFO || sched_getparam(tid, &cur) != 0) continue;
      if (cur.sched_priority != kCommFifoPriority) continue;  // not a comm thread (the guard)
      sched_param sp{};
      if (sched_setscheduler(tid, SCHED_OTHER, &sp) == 0) ++demoted;
    }
    closedir(dir);
  }
  gDemotions.fetch_add(1);
  DDP_LOG(Warning) << "comm thread priority: " << why << "; demoted " << demoted
                   << " thread(s) to normal priority for the rest of this process (set "
                   "commThreadPriority: normal for jobs with more workers than cores)";
  return demoted;
}

void setThreadName(const char* name) {
  char buf[16];
  std::strncpy(buf, name, sizeof(buf) - 1);
  buf[sizeof(buf) - 1] = '\0';
  (void)pthread_setname_np(pthread_self(), buf);
}

}  // namespace ddp
